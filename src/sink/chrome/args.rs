//! The Chrome sink's annotation spread: the reference's `_annotation_to_args`, which puts an
//! op's annotation (and metadata) into its `args`. A JSON object is spread into args, a list
//! becomes `annotation` as Python's `json.dumps` text, anything else becomes `annotation`
//! itself. Each function gives the members to splice into args as JSON text without braces
//! (possibly empty), or None for none.

use serde_json::value::RawValue;

use super::{write_py_float, write_str};

/// Members for an `annotation` cell: JSON text of the producer's value, decoded once by the
/// reference's loader, then handed to `_annotation_to_args` (which decodes strings again).
pub fn annotation_members(stored: &str) -> Option<String> {
    match serde_json::from_str::<&RawValue>(stored) {
        Ok(raw) => {
            let json = raw.get();
            match json.as_bytes()[0] {
                b'n' => None,
                b'"' => {
                    let s: String = serde_json::from_str(json).ok()?;
                    text_members(&s)
                }
                _ => Some(value_members(json)),
            }
        }
        // Not JSON (a producer outside the format): the text itself.
        Err(_) => text_members(stored),
    }
}

/// Members for a text handed to `_annotation_to_args` as a Python `str` (the `metadata`
/// column, a decoded annotation string): decoded as JSON when it is JSON, else kept.
pub fn text_members(text: &str) -> Option<String> {
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) => Some(value_members(raw.get())),
        Err(_) => {
            let mut buf = b"\"annotation\":".to_vec();
            write_str(&mut buf, text);
            Some(String::from_utf8(buf).expect("JSON text of a str is UTF-8"))
        }
    }
}

/// Members for a decoded JSON value: an object's own members, else `"annotation": v`
/// (a list as the text Python's `json.dumps` gives it).
fn value_members(json: &str) -> String {
    match json.as_bytes()[0] {
        b'{' => json[1..json.len() - 1].trim().to_string(),
        b'[' => {
            let mut buf = b"\"annotation\":".to_vec();
            write_str(&mut buf, &python_dumps(json));
            String::from_utf8(buf).expect("JSON text is UTF-8")
        }
        _ => format!("\"annotation\":{json}"),
    }
}

/// Valid JSON text re-written as Python's `json.dumps` writes it: `", "` and `": "`
/// separators, non-ASCII escaped, floats as Python's repr.
pub fn python_dumps(json: &str) -> String {
    let b = json.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(json.len() + 16);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b',' => {
                out.extend_from_slice(b", ");
                i += 1;
            }
            b':' => {
                out.extend_from_slice(b": ");
                i += 1;
            }
            b'"' => {
                let mut j = i + 1;
                while b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let s: String =
                    serde_json::from_str(&json[i..=j]).expect("a string of valid JSON text");
                write_ascii_str(&mut out, &s);
                i = j + 1;
            }
            b'-' | b'0'..=b'9' => {
                let mut j = i;
                while j < b.len() && matches!(b[j], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    j += 1;
                }
                let num = &json[i..j];
                if num.contains(['.', 'e', 'E']) {
                    write_py_float(&mut out, num.parse().unwrap_or(f64::NAN));
                } else {
                    out.extend_from_slice(num.as_bytes());
                }
                i = j;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("ASCII")
}

/// A JSON string as Python's `json.dumps` (ensure_ascii) writes it.
fn write_ascii_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_spread_lists_dump_and_scalars_become_the_annotation() {
        assert_eq!(
            annotation_members(r#"{"stage": "fwd", "layer": 1}"#).unwrap(),
            r#""stage": "fwd", "layer": 1"#
        );
        assert_eq!(
            annotation_members(r#""region_b""#).unwrap(),
            r#""annotation":"region_b""#
        );
        assert_eq!(annotation_members(r#""{\"a\":1}""#).unwrap(), r#""a":1"#);
        assert_eq!(annotation_members("null"), None);
        assert_eq!(annotation_members("7").unwrap(), r#""annotation":7"#);
        assert_eq!(
            annotation_members(r#"[{"Process Group Name":"5","x":1.50}]"#).unwrap(),
            r#""annotation":"[{\"Process Group Name\": \"5\", \"x\": 1.5}]""#
        );
        assert_eq!(
            text_members("not json").unwrap(),
            r#""annotation":"not json""#
        );
        assert_eq!(text_members("{}").unwrap(), "");
    }

    #[test]
    fn python_dumps_escapes_non_ascii() {
        assert_eq!(
            python_dumps(r#"["é😀",true,null]"#),
            r#"["\u00e9\ud83d\ude00", true, null]"#
        );
    }
}
