//! The native encoder's JSON spread: a blob of JSON text becomes TrackEvent debug
//! annotations; a render stage's annotation, metadata and host callback become its
//! extra_data ([`StageSpread`]). Keys come out sorted (the reference parses with a
//! map-backed JSON library; serde_json's map is a BTreeMap, the same byte order).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::wire::Wire;
use crate::sink::json_text::write_py_float;

/// TrackEvent.debug_annotations (field 4) for a JSON blob: one per top-level key of an
/// object (nested objects as `dict_entries`, arrays as `array_values`); a top-level array is
/// one "annotation" holding its compact JSON, a scalar one typed "annotation", unparsable
/// text the text itself.
pub fn json_annotations(text: &str, event: &mut Wire) {
    // Most blobs are objects with plain keys: read borrowed, each member's value as text.
    if let Ok(members) = serde_json::from_str::<BTreeMap<&str, &RawValue>>(text) {
        for (k, v) in &members {
            event.message(4, |a| member_annotation(k, v, a));
        }
        return;
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            for (k, v) in &map {
                event.message(4, |a| annotation(Some(k), v, a));
            }
        }
        Ok(v @ Value::Array(_)) => string_annotation(event, &v.to_string()),
        Ok(v) => event.message(4, |a| annotation(Some("annotation"), &v, a)),
        Err(_) => string_annotation(event, text),
    }
}

/// A DebugAnnotation's body for an object member given as JSON text: a plain string is
/// written as it stands, anything else decoded first.
fn member_annotation(name: &str, raw: &RawValue, a: &mut Wire) {
    let text = raw.get();
    if let Some(Ok(s)) = text
        .starts_with('"')
        .then(|| serde_json::from_str::<Cow<str>>(text))
    {
        a.bytes(6, s.as_bytes());
        a.bytes(10, name.as_bytes());
        return;
    }
    // The text is valid JSON: it was read as one value.
    let value = serde_json::from_str::<Value>(text).unwrap_or(Value::Null);
    annotation(Some(name), &value, a);
}

fn string_annotation(event: &mut Wire, text: &str) {
    event.message(4, |a| {
        a.bytes(6, text.as_bytes());
        a.bytes(10, b"annotation");
    });
}

/// A DebugAnnotation's body: its value (bool 2, int 4, double 5, string 6), name (10), then
/// dict_entries (11) or array_values (12), in tag order.
fn annotation(name: Option<&str>, v: &Value, a: &mut Wire) {
    match v {
        Value::Null => a.bytes(6, b"null"),
        Value::Bool(b) => a.bool(2, *b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                a.int(4, i);
            } else if let Some(u) = n.as_u64() {
                a.int(4, u as i64);
            } else {
                a.double(5, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => a.bytes(6, s.as_bytes()),
        Value::Array(_) | Value::Object(_) => {}
    }
    if let Some(name) = name {
        a.bytes(10, name.as_bytes());
    }
    match v {
        Value::Array(items) => {
            for item in items {
                a.message(12, |e| annotation(None, item, e));
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                a.message(11, |e| annotation(Some(k), item, e));
            }
        }
        _ => {}
    }
}

/// What a render stage spreads onto its extra_data, as the window holds it.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageSpread<'a> {
    /// the op's annotation cell: JSON text of a dict, a list of dicts, or a string
    pub annotation: Option<&'a str>,
    /// the op's metadata: JSON text of a dict
    pub metadata: Option<&'a str>,
    /// a host node's callback name
    pub host_fn: Option<&'a str>,
    /// a host node's callback address (0: none)
    pub host_fn_addr: i64,
}

/// GpuRenderStageEvent.extra_data (field 6) for `spread`: the annotation's members (a
/// dict, or a list of dicts; a plain string is "annotation"), the metadata object's
/// members, the callback's name and address (hex), one entry per key.
pub fn stage_extra_data(spread: &StageSpread<'_>, stage: &mut Wire) {
    if let Some(map) = spread_members(spread) {
        extra_data(&map, stage);
    }
}

/// The members [`stage_extra_data`] writes; None when empty.
fn spread_members(spread: &StageSpread<'_>) -> Option<Map<String, Value>> {
    let mut merged = Map::new();
    if let Some(Ok(value)) = spread.annotation.map(serde_json::from_str::<Value>) {
        let items = match value {
            Value::Array(items) => items,
            other => vec![other],
        };
        for item in items {
            match item {
                Value::Object(map) => merged.extend(map),
                Value::String(s) => {
                    merged.entry("annotation").or_insert(Value::String(s));
                }
                _ => {}
            }
        }
    }
    if let Some(Ok(Value::Object(map))) = spread.metadata.map(serde_json::from_str::<Value>) {
        merged.extend(map);
    }
    if let Some(f) = spread.host_fn.filter(|f| !f.is_empty()) {
        merged.insert("host fn".into(), Value::String(f.into()));
    }
    let addr = spread.host_fn_addr;
    if addr != 0 {
        let hex = if addr < 0 {
            format!("-{:#x}", addr.unsigned_abs())
        } else {
            format!("{addr:#x}")
        };
        merged.insert("host fn addr".into(), Value::String(hex));
    }
    (!merged.is_empty()).then_some(merged)
}

/// GpuRenderStageEvent.extra_data (field 6) for a JSON object: one entry per key, strings
/// raw, anything else as compact JSON.
fn extra_data(map: &Map<String, Value>, stage: &mut Wire) {
    let mut text = Vec::new();
    for (k, v) in map {
        stage.message(6, |e| {
            e.bytes(1, k.as_bytes());
            match v {
                Value::String(s) => e.bytes(2, s.as_bytes()),
                other => {
                    text.clear();
                    write_compact(&mut text, other);
                    e.bytes(2, &text);
                }
            }
        });
    }
}

/// `v` as compact JSON with sorted keys, its floats spelled as the reference's blob has them:
/// the blob is Python's `json.dumps` text (`1e-05`, `1.5`, `100000.0`), which the native
/// encoder re-dumps keeping each number's spelling.
fn write_compact(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.extend_from_slice(i.to_string().as_bytes()),
            (_, Some(u), _) => out.extend_from_slice(u.to_string().as_bytes()),
            (_, _, Some(f)) => write_py_float(out, f),
            _ => out.extend_from_slice(n.to_string().as_bytes()),
        },
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_compact(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("writing to a Vec cannot fail");
                out.push(b':');
                write_compact(out, item);
            }
            out.push(b'}');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).expect("writing to a Vec cannot fail"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::proto::{GpuRenderStageEvent, TrackEvent};
    use super::*;
    use prost::Message;

    #[test]
    fn objects_spread_with_sorted_keys_and_typed_leaves() {
        let mut w = Wire::default();
        json_annotations(
            r#"{"b": 1.5, "a": [1, "x"], "c": null, "d": {"z": true}}"#,
            &mut w,
        );
        let out = TrackEvent::decode(&w.buf[..]).unwrap().debug_annotations;
        let prost_bytes = TrackEvent {
            debug_annotations: out.clone(),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(prost_bytes, w.buf, "fields are in tag order");
        let names: Vec<_> = out.iter().map(|a| a.name.clone().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(out[0].array_values[0].int_value, Some(1));
        assert_eq!(out[0].array_values[1].string_value.as_deref(), Some("x"));
        assert_eq!(out[1].double_value, Some(1.5));
        assert_eq!(out[2].string_value.as_deref(), Some("null"));
        assert_eq!(out[3].dict_entries[0].name.as_deref(), Some("z"));
        assert_eq!(out[3].dict_entries[0].bool_value, Some(true));
    }

    #[test]
    fn the_last_of_a_repeated_key_wins_and_escaped_keys_spread_too() {
        for text in [
            r#"{"b": "x", "a": 1, "b": "y"}"#,
            r#"{"b": "x", "a": 1, "b": "y", "c\"q": [2]}"#,
        ] {
            let mut w = Wire::default();
            json_annotations(text, &mut w);
            let out = TrackEvent::decode(&w.buf[..]).unwrap().debug_annotations;
            let names: Vec<_> = out.iter().map(|a| a.name.clone().unwrap()).collect();
            assert_eq!(&names[..2], ["a", "b"], "{text}");
            assert_eq!(out[1].string_value.as_deref(), Some("y"), "{text}");
            if names.len() == 3 {
                assert_eq!(names[2], "c\"q");
                assert_eq!(out[2].array_values[0].int_value, Some(2));
            }
        }
    }

    #[test]
    fn arrays_scalars_and_bad_text_are_one_annotation() {
        for (text, string, int) in [
            ("[1, 2]", Some("[1,2]"), None),
            ("7", None, Some(7)),
            ("{oops", Some("{oops"), None),
        ] {
            let mut w = Wire::default();
            json_annotations(text, &mut w);
            let out = TrackEvent::decode(&w.buf[..]).unwrap().debug_annotations;
            assert_eq!(out.len(), 1, "{text}");
            assert_eq!(out[0].name.as_deref(), Some("annotation"), "{text}");
            assert_eq!(out[0].string_value.as_deref(), string, "{text}");
            assert_eq!(out[0].int_value, int, "{text}");
        }
    }

    #[test]
    fn extra_data_keeps_strings_raw_and_dumps_the_rest() {
        let Value::Object(map) =
            serde_json::from_str(r#"{"s": "x", "n": 2, "o": {"b": 1, "a": 2}}"#).unwrap()
        else {
            panic!("an object")
        };
        let mut w = Wire::default();
        extra_data(&map, &mut w);
        let out = GpuRenderStageEvent::decode(&w.buf[..]).unwrap().extra_data;
        let pairs: Vec<_> = out
            .iter()
            .map(|e| (e.name.clone().unwrap(), e.value.clone().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("n".into(), "2".into()),
                ("o".into(), r#"{"a":2,"b":1}"#.into()),
                ("s".into(), "x".into())
            ]
        );
    }

    #[test]
    fn extra_data_spells_numbers_as_python_json_dumps() {
        // The blob as the reference's json.dumps writes it, then read back by the encoder.
        let blob = r#"{"f": 1e-05, "g": 1.5, "h": [100000.0, 1e+20, -0.0, 3], "i": {"z": 2.5e-07, "y": "é"}, "j": 12345678901234567890}"#;
        let Value::Object(map) = serde_json::from_str(blob).unwrap() else {
            panic!("an object")
        };
        let mut w = Wire::default();
        extra_data(&map, &mut w);
        let out = GpuRenderStageEvent::decode(&w.buf[..]).unwrap().extra_data;
        let values: Vec<_> = out.iter().map(|e| e.value.clone().unwrap()).collect();
        assert_eq!(
            values,
            [
                "1e-05",
                "1.5",
                "[100000.0,1e+20,-0.0,3]",
                r#"{"y":"é","z":2.5e-07}"#,
                "12345678901234567890"
            ]
        );
    }
}
