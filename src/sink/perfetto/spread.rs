//! The native encoder's JSON spread: a blob of JSON text becomes TrackEvent debug
//! annotations or render-stage extra_data. Keys come out sorted (the reference parses with a
//! map-backed JSON library; serde_json's map is a BTreeMap, the same byte order).

use serde_json::Value;

use super::proto::{DebugAnnotation, ExtraData};

/// Debug annotations for a JSON blob: one per top-level key of an object (nested objects as
/// `dict_entries`, arrays as `array_values`); a top-level array is one "annotation" holding
/// its compact JSON, a scalar one typed "annotation", unparsable text the text itself.
pub fn json_annotations(text: &str, out: &mut Vec<DebugAnnotation>) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            for (k, v) in map {
                out.push(annotation(Some(k), &v));
            }
        }
        Ok(v @ Value::Array(_)) => out.push(DebugAnnotation {
            name: Some("annotation".into()),
            string_value: Some(v.to_string()),
            ..Default::default()
        }),
        Ok(v) => out.push(annotation(Some("annotation".into()), &v)),
        Err(_) => out.push(DebugAnnotation {
            name: Some("annotation".into()),
            string_value: Some(text.to_string()),
            ..Default::default()
        }),
    }
}

fn annotation(name: Option<String>, v: &Value) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name,
        ..Default::default()
    };
    match v {
        Value::Null => a.string_value = Some("null".into()),
        Value::Bool(b) => a.bool_value = Some(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                a.int_value = Some(i);
            } else if let Some(u) = n.as_u64() {
                a.int_value = Some(u as i64);
            } else {
                a.double_value = Some(n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => a.string_value = Some(s.clone()),
        Value::Array(items) => {
            a.array_values = items.iter().map(|v| annotation(None, v)).collect();
        }
        Value::Object(map) => {
            a.dict_entries = map
                .iter()
                .map(|(k, v)| annotation(Some(k.clone()), v))
                .collect();
        }
    }
    a
}

/// extra_data entries for a JSON blob: one per top-level key of an object (strings raw,
/// anything else as compact JSON); anything else is one "metadata" entry with the text.
pub fn json_extra_data(text: &str, out: &mut Vec<ExtraData>) {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            for (k, v) in map {
                let value = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.push(ExtraData {
                    name: Some(k),
                    value: Some(value),
                });
            }
        }
        _ => out.push(ExtraData {
            name: Some("metadata".into()),
            value: Some(text.to_string()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_spread_with_sorted_keys_and_typed_leaves() {
        let mut out = Vec::new();
        json_annotations(
            r#"{"b": 1.5, "a": [1, "x"], "c": null, "d": {"z": true}}"#,
            &mut out,
        );
        let names: Vec<_> = out.iter().map(|a| a.name.clone().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(out[0].array_values[0].int_value, Some(1));
        assert_eq!(out[0].array_values[1].string_value.as_deref(), Some("x"));
        assert_eq!(out[1].double_value, Some(1.5));
        assert_eq!(out[2].string_value.as_deref(), Some("null"));
        assert_eq!(out[3].dict_entries[0].bool_value, Some(true));
    }

    #[test]
    fn extra_data_keeps_strings_raw_and_dumps_the_rest() {
        let mut out = Vec::new();
        json_extra_data(r#"{"s": "x", "n": 2, "o": {"b": 1, "a": 2}}"#, &mut out);
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
}
