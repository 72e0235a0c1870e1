//! The top-level members of one JSON object given as text, found by a byte scan: where each
//! key and value is, with nothing decoded or checked. The split's index and the merged
//! trace's renaming read a few members (`ph`, `ts`, `pid`, `id`, ...) of every CPU-trace
//! event this way, instead of parsing the whole event (its `args` are most of its bytes)
//! into serde values.
//!
//! The text must be valid JSON (the CPU trace's events were parsed when the trace was
//! read); the scan only finds boundaries. It gives up (None) on anything but an object.

use std::ops::Range;

use memchr::memchr2;

/// One member of an object: its key as written between the quotes (escapes kept) and the
/// byte range of its value's text in the object's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    pub key: &'a str,
    pub value: Range<usize>,
}

/// The members of the object `text`, in their order; None when `text` is not an object.
pub fn members(text: &str) -> Option<Vec<Member<'_>>> {
    let b = text.as_bytes();
    let mut i = skip_space(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_space(b, i + 1);
    let mut out = Vec::with_capacity(12);
    if b.get(i) == Some(&b'}') {
        return Some(out);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = text.get(i + 1..key_end - 1)?;
        i = skip_space(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_space(b, i + 1);
        let end = value_end(b, start)?;
        out.push(Member {
            key,
            value: start..end,
        });
        i = skip_space(b, end);
        match b.get(i) {
            Some(b',') => i = skip_space(b, i + 1),
            Some(b'}') => return Some(out),
            _ => return None,
        }
    }
}

/// The text of a string value without its quotes, when it has no escapes (else None: the
/// caller decodes it).
pub fn plain_str(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The end (one past the closing quote) of the string opening at `b[start]`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        i += memchr2(b'"', b'\\', b.get(i..)?)?;
        match b[i] {
            b'"' => return Some(i + 1),
            _ => i += 2,
        }
    }
}

/// The end of the value starting at `b[start]`.
fn value_end(b: &[u8], start: usize) -> Option<usize> {
    match b.get(start)? {
        b'"' => string_end(b, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let rest = &b[start..];
            let len = rest
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(rest.len());
            (len > 0).then_some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    /// The members as serde reads them: key decoded, value's raw text.
    fn by_serde(text: &str) -> Vec<(String, String)> {
        let raw: std::collections::BTreeMap<String, &RawValue> =
            serde_json::from_str(text).unwrap();
        raw.into_iter()
            .map(|(k, v)| (k, v.get().to_string()))
            .collect()
    }

    fn by_scan(text: &str) -> Vec<(String, String)> {
        let mut found: Vec<(String, String)> = members(text)
            .unwrap()
            .into_iter()
            .map(|m| {
                let key = serde_json::from_str(&format!("\"{}\"", m.key)).unwrap();
                (key, text[m.value].to_string())
            })
            .collect();
        found.sort();
        found
    }

    #[test]
    fn members_are_found_as_serde_finds_them() {
        let events = [
            r#"{}"#,
            r#" { } "#,
            r#"{"ph":"X","ts":12.5,"dur":1,"args":{"a":[1,{"b":"}]"}],"c":"q\"}"}}"#,
            r#"{ "name" : "a,b}" , "id" : -7e3 ,"pid":"GPU 0","x":[[],{}], "t":true,"n":null }"#,
            "{\n\t\"ph\":\"s\",\r\n\"cat\":\"ac2g\\\\\",\"id\":\"0x1f\"}",
            r#"{"k\"ey":1,"z":"\u00e9\\"}"#,
        ];
        for event in events {
            assert_eq!(by_scan(event), by_serde(event), "{event}");
        }
        let order: Vec<&str> = members(r#"{"b":1,"a":2}"#)
            .unwrap()
            .iter()
            .map(|m| m.key)
            .collect();
        assert_eq!(order, ["b", "a"]);
    }

    #[test]
    fn anything_but_an_object_is_none() {
        for text in [
            "[1]",
            "1",
            r#""{}""#,
            "",
            "{",
            r#"{"a"}"#,
            r#"{"a":1"#,
            r#"{"a":"#,
        ] {
            assert_eq!(members(text), None, "{text}");
        }
    }

    #[test]
    fn a_plain_string_is_its_text_and_an_escaped_one_is_left_to_the_caller() {
        assert_eq!(plain_str(r#""ac2g""#), Some("ac2g"));
        assert_eq!(plain_str(r#""a\"b""#), None);
        assert_eq!(plain_str("12"), None);
    }
}
