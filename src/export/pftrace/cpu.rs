//! The Kineto CPU trace as the .pftrace export reads it: `M` names for the tracks, and the
//! `X` events drawn as CPU slices (all but the categories the window itself supplies).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::slices::{Annotations, Names, SliceRow};
use super::tracks::{py_str, Id, Tracks};
use crate::export::TraceDoc;
use crate::sink::perfetto::Interned;

/// Categories that are not CPU slices: the profiler's own, and what the window draws.
const NON_CPU_CATS: &[&str] = &[
    "Trace",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "cuda_runtime",
    "cuda_driver",
    "cuda_sync",
    "overhead",
    "graph_event_node",
    "graph_host_node",
];

/// An event's members as JSON text (a `null` is kept, as Some("null")), read without
/// building values: most are plain strings and numbers.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    ph: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    cat: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    name: Option<&'a RawValue>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present")]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The value of a JSON string, borrowed when it has no escapes; None for any other value.
fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    text.starts_with('"')
        .then(|| serde_json::from_str::<Cow<str>>(text).ok())
        .flatten()
}

/// Python's `str()` of a JSON value.
fn py_text(raw: &RawValue) -> Cow<'_, str> {
    json_str(raw).unwrap_or_else(|| {
        Cow::Owned(py_str(
            serde_json::from_str::<Value>(raw.get()).ok().as_ref(),
        ))
    })
}

/// A JSON number as f64; 0.0 for anything else.
fn as_f64(raw: Option<&RawValue>) -> f64 {
    raw.and_then(|r| r.get().parse().ok()).unwrap_or(0.0)
}

/// Whether `args` is an object with members. The text is valid JSON (the event parsed), so
/// an object with anything but whitespace after its `{` but `}` has a member.
fn has_members(args: &str) -> bool {
    args.strip_prefix('{')
        .is_some_and(|rest| !rest.trim_start().starts_with('}'))
}

/// Read the track names of the `M` events into `tracks`, then register and return the CPU
/// slices in trace order (times: base + round-half-even(µs × 1000), in f64 as numpy does),
/// their names and categories interned in that order.
pub(super) fn cpu_slices<'a>(
    doc: &TraceDoc<'a>,
    base_ns: i64,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Vec<SliceRow<'a>> {
    let name_arg = |args: Option<&RawValue>| -> String {
        args.and_then(|a| serde_json::from_str::<Value>(a.get()).ok())
            .and_then(|v| v.get("name").cloned())
            .map(|v| match v {
                Value::String(s) => s,
                other => py_str(Some(&other)),
            })
            .unwrap_or_default()
    };
    // One pass, each event parsed once and dropped: the slices' threads are registered after
    // it, once every `M` event has named its track.
    let mut out = Vec::new();
    let mut threads = Vec::new();
    for text in doc.events() {
        let Ok(e) = serde_json::from_str::<Event>(text) else {
            continue;
        };
        match e.ph.and_then(json_str).as_deref() {
            Some("M") => match e.name.and_then(json_str).as_deref() {
                Some("process_name") => {
                    let pid = Id::from_json(e.pid.as_ref());
                    tracks.process_names.insert(pid, name_arg(e.args));
                }
                Some("thread_name") => {
                    let key = (Id::from_json(e.pid.as_ref()), Id::from_json(e.tid.as_ref()));
                    tracks.thread_names.insert(key, name_arg(e.args));
                }
                _ => {}
            },
            Some("X") => {
                let cat = e.cat.map_or(Cow::Borrowed(""), py_text);
                // Only a JSON string can be one of these names.
                if NON_CPU_CATS.contains(&cat.as_ref()) {
                    continue;
                }
                let ts = base_ns + (as_f64(e.ts) * 1000.0).round_ties_even() as i64;
                let end = ts + (as_f64(e.dur) * 1000.0).round_ties_even() as i64;
                threads.push((Id::from_json(e.pid.as_ref()), Id::from_json(e.tid.as_ref())));
                let args = e.args.map(RawValue::get).filter(|a| has_members(a));
                let name = e.name.map_or(Cow::Borrowed(""), py_text);
                out.push(SliceRow {
                    ts,
                    end,
                    uuid: 0,
                    name_iid: names.event(&name, &mut interned.event_names),
                    category_iid: match cat.is_empty() {
                        true => 0,
                        false => names.category(&cat, &mut interned.categories),
                    },
                    annotations: Annotations::None,
                    json: args,
                    gpu_correlation: Vec::new(),
                });
            }
            _ => {}
        }
    }
    for (slice, (pid, tid)) in out.iter_mut().zip(&threads) {
        slice.uuid = tracks.thread(pid, tid, "", "");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn values_read_as_python_shows_them() {
        assert_eq!(py_text(raw(r#""aten::mm""#)), "aten::mm");
        assert_eq!(py_text(raw(r#""a\"b""#)), "a\"b");
        assert_eq!(py_text(raw("null")), "None");
        assert_eq!(py_text(raw("true")), "True");
        assert_eq!(py_text(raw("12")), "12");
        assert_eq!(json_str(raw("12")), None);
        assert_eq!(as_f64(Some(raw("1.5e3"))), 1500.0);
        assert_eq!(as_f64(Some(raw(r#""7""#))), 0.0);
        assert_eq!(as_f64(None), 0.0);
    }

    #[test]
    fn only_objects_with_members_are_args() {
        assert!(has_members(r#"{"a": 1}"#));
        assert!(has_members(r#"{ "a": {}}"#));
        assert!(!has_members("{}"));
        assert!(!has_members("{ \n }"));
        assert!(!has_members("[1]"));
        assert!(!has_members("\"x\""));
    }

    #[test]
    fn a_null_member_is_kept_and_a_missing_one_is_none() {
        let e: Event = serde_json::from_str(r#"{"ph": "X", "name": null}"#).unwrap();
        assert_eq!(e.name.map(RawValue::get), Some("null"));
        assert!(e.cat.is_none() && e.ts.is_none());
    }
}
