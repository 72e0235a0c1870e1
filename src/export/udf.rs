//! Scalar functions the `sql/export/` plans call where SQL has no word for the reference's
//! Python: `chrome_tid` (its `_export_tid`), `chrome_hex` (`hex()`), `chrome_dim3` (a
//! launch's grid or block as the JSON list the reference writes), and
//! `chrome_annotation_args` / `chrome_metadata_args` (`_annotation_to_args`: a JSON object is
//! spread into args, a list becomes `annotation` as Python's `json.dumps` text, anything
//! else becomes `annotation` itself). The last two return the members to splice into args
//! as JSON text without braces, or NULL for none.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, StringArray, StringBuilder};
use datafusion::arrow::buffer::{Buffer, OffsetBuffer};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use serde_json::value::RawValue;

use crate::sink::chrome::write_py_float;

/// Every export function, for registration in a context.
pub fn export_udfs() -> Vec<ScalarUDF> {
    vec![
        create_udf(
            "chrome_tid",
            vec![DataType::Int64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(chrome_tid),
        ),
        create_udf(
            "chrome_hex",
            vec![DataType::UInt64],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(chrome_hex),
        ),
        create_udf(
            "chrome_annotation_args",
            vec![DataType::Utf8View],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(|args: &[ColumnarValue]| map_text(args, annotation_members)),
        ),
        create_udf(
            "chrome_metadata_args",
            vec![DataType::Utf8View],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(|args: &[ColumnarValue]| map_text(args, text_members)),
        ),
        create_udf(
            "chrome_dim3",
            vec![DataType::Int64; 3],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(chrome_dim3),
        ),
    ]
}

fn chrome_tid(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<Int64Type>();
    let out: Int64Array = input.unary(|t| if t == i64::MIN { 0 } else { t.abs() });
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// `chrome_dim3(x, y, z)`: the JSON list `[x,y,z]` (a NULL leaves its place empty, as
/// `concat` would); written straight into the array's buffer, once per kernel.
fn chrome_dim3(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let dims: Vec<_> = arrays
        .iter()
        .map(|a| a.as_primitive::<Int64Type>())
        .collect();
    let rows = arrays.first().map_or(0, |a| a.len());
    let mut text = Vec::with_capacity(rows * 12);
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0i32);
    for row in 0..rows {
        for (k, dim) in dims.iter().enumerate() {
            text.push(if k == 0 { b'[' } else { b',' });
            if dim.is_valid(row) {
                crate::sink::json_text::write_int(&mut text, dim.value(row));
            }
        }
        text.push(b']');
        let end = i32::try_from(text.len())
            .map_err(|_| DataFusionError::Execution("chrome_dim3: batch too large".into()))?;
        offsets.push(end);
    }
    let out = StringArray::try_new(
        OffsetBuffer::new(offsets.into()),
        Buffer::from_vec(text),
        None,
    )?;
    Ok(ColumnarValue::Array(Arc::new(out)))
}

fn chrome_hex(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<UInt64Type>();
    let mut out = StringBuilder::with_capacity(input.len(), input.len() * 14);
    for v in input.iter() {
        out.append_option(v.map(|v| format!("{v:#x}")));
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

fn map_text(args: &[ColumnarValue], f: fn(&str) -> Option<String>) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_string_view();
    let mut out = StringBuilder::with_capacity(input.len(), 0);
    // Annotations repeat (one per graph node, every replay): decode each text once.
    let mut seen: HashMap<&str, Option<String>> = HashMap::new();
    for v in input.iter() {
        match v {
            None => out.append_null(),
            Some(text) => {
                let members = seen.entry(text).or_insert_with(|| f(text));
                out.append_option(members.as_deref());
            }
        }
    }
    let array: ArrayRef = Arc::new(out.finish());
    Ok(ColumnarValue::Array(array))
}

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
            crate::sink::chrome::write_str(&mut buf, text);
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
            crate::sink::chrome::write_str(&mut buf, &python_dumps(json));
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
    fn dim3_is_the_json_list_concat_wrote() {
        let column = |v: Vec<Option<i64>>| ColumnarValue::Array(Arc::new(Int64Array::from(v)));
        let out = chrome_dim3(&[
            column(vec![Some(128), Some(-1), None]),
            column(vec![Some(1), Some(0), Some(2)]),
            column(vec![Some(1), Some(i64::MAX), Some(3)]),
        ])
        .unwrap()
        .to_array(3)
        .unwrap();
        let out: Vec<_> = out.as_string::<i32>().iter().flatten().collect();
        assert_eq!(out, ["[128,1,1]", "[-1,0,9223372036854775807]", "[,2,3]"]);
    }

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
