//! Walk the members of a JSON object whose text is already validated (an event, its `args`).
//! Validation is done once, by [`super::Doc::parse`]; here only the structure is followed.

use std::borrow::Cow;

use super::scan::{equal_bytes, string_stop, ONES};

/// The members of the object `text` in order, as (key, value as written); None when `text`
/// is not an object. `text` must be valid JSON.
pub fn members(text: &str) -> Option<Members<'_>> {
    let text = text.trim_matches(is_space);
    text.starts_with('{').then_some(Members { text, at: 1 })
}

/// Iterator of [`members`].
pub struct Members<'a> {
    text: &'a str,
    /// Byte offset just past `{` or the last value.
    at: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (Cow<'a, str>, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.text.as_bytes();
        // past whitespace and the separating comma to the key's quote, or the closing brace
        let key_start = self.at + b[self.at..].iter().position(|c| *c == b'"' || *c == b'}')?;
        if b[key_start] == b'}' {
            self.at = key_start;
            return None;
        }
        let (key_end, escaped) = string_end(b, key_start);
        let colon = key_end + b[key_end..].iter().position(|c| *c == b':')?;
        let value_start = colon
            + 1
            + b[colon + 1..]
                .iter()
                .position(|c| !is_space(char::from(*c)))?;
        let value_end = value_end(b, value_start);
        self.at = value_end;
        let key = decode(&self.text[key_start..key_end], escaped);
        Some((key, &self.text[value_start..value_end]))
    }
}

/// The text of the JSON string `quoted` (quotes included), decoded only when it has escapes.
pub fn unquote(quoted: &str) -> Cow<'_, str> {
    decode(quoted, quoted.contains('\\'))
}

/// The text of the JSON string `quoted`; `escaped` says whether it has escapes to decode.
#[inline]
pub fn decode(quoted: &str, escaped: bool) -> Cow<'_, str> {
    if escaped {
        // A valid string only fails to decode on a lone surrogate escape (`\ud800`), which
        // Python writes happily; keep its text as written rather than fail the import.
        serde_json::from_str(quoted)
            .map_or_else(|_| Cow::Borrowed(&quoted[1..quoted.len() - 1]), Cow::Owned)
    } else {
        Cow::Borrowed(&quoted[1..quoted.len() - 1])
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// One past the closing quote of the string opening at `b[start]`, and whether it has
/// escapes.
fn string_end(b: &[u8], start: usize) -> (usize, bool) {
    let mut escaped = false;
    let mut at = start + 1;
    loop {
        at = string_stop(b, at);
        match b.get(at) {
            Some(b'"') => return (at + 1, escaped),
            Some(b'\\') => {
                escaped = true;
                at = (at + 2).min(b.len()); // the backslash and the character it escapes
            }
            Some(_) => at += 1, // a control byte, which validated text does not hold
            None => return (b.len(), escaped),
        }
    }
}

/// One past the end of the value starting at `b[start]`.
fn value_end(b: &[u8], start: usize) -> usize {
    match b[start] {
        b'"' => string_end(b, start).0,
        b'{' | b'[' => container_end(b, start),
        // a number, true, false or null
        _ => {
            start
                + b[start..]
                    .iter()
                    .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                    .unwrap_or(b.len() - start)
        }
    }
}

/// One past the bracket closing the object or array opening at `b[start]`.
fn container_end(b: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut at = start;
    while let Some(i) = next_structural(b, at) {
        match b[i] {
            b'"' => {
                at = string_end(b, i).0;
                continue;
            }
            b'{' | b'[' => depth += 1,
            _ => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
        }
        at = i + 1;
    }
    b.len()
}

/// The offset of the first `"`, `{`, `}`, `[` or `]` at or after `at`, eight bytes at a time.
fn next_structural(b: &[u8], mut at: usize) -> Option<usize> {
    while at + 8 <= b.len() {
        let x = u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        // `[` and `]` differ from `{` and `}` by the 0x20 bit only.
        let folded = x | (ONES * 0x20);
        let hits = equal_bytes(x, b'"') | equal_bytes(folded, b'{') | equal_bytes(folded, b'}');
        if hits != 0 {
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    b[at..]
        .iter()
        .position(|c| matches!(c, b'"' | b'{' | b'}' | b'[' | b']'))
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Option<Vec<(String, String)>> {
        Some(
            members(text)?
                .map(|(k, v)| (k.into_owned(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn members_match_serde_json_on_tricky_objects() {
        let texts = [
            r#"{}"#,
            r#" { } "#,
            r#"{"a":1}"#,
            r#"{ "a" : -1.5e3 , "b":"x\"}y" ,"c\u0041":[1,{"d":"]"}],"e":{"f":[]},"g":true,"h":null}"#,
            "{\n\t\"k\\\\\" :\r\n\"v\\\\\"\n}",
            r#"{"a":"", "a": 2}"#,
            r#"{"a long key, longer than sixteen bytes":"and a \\ \" longer value, with escapes \"","b":1}"#,
            r#"{"\"":"\\", "x\"y":"y\\\"z"}"#,
        ];
        for text in texts {
            let expected: Vec<(String, String)> = raw_members(text)
                .unwrap()
                .into_iter()
                .map(|(k, v)| (k, v.get().to_string()))
                .collect();
            assert_eq!(all(text).unwrap(), expected, "{text}");
        }
        assert_eq!(all("[1, 2]"), None);
        assert_eq!(all(r#""{}""#), None);
        assert_eq!(all("null"), None);
    }

    #[test]
    fn structural_scan_finds_the_first_bracket_or_quote() {
        let text = "ab c{d}é[[ x ]]\\\"   ----------{ü\u{7f}\u{5b}~;:|\\}";
        let b = text.as_bytes();
        for at in 0..=b.len() {
            let naive = (at..b.len()).find(|i| b"\"{}[]".contains(&b[*i]));
            assert_eq!(next_structural(b, at), naive, "from {at}");
        }
    }

    /// serde_json's view: keys decoded, values as written, duplicates kept.
    fn raw_members(text: &str) -> Option<Vec<(String, Box<serde_json::value::RawValue>)>> {
        use serde::de::{Deserializer, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(String, Box<serde_json::value::RawValue>)>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(out)
            }
        }
        serde_json::Deserializer::from_str(text)
            .deserialize_map(V)
            .ok()
    }
}
