//! The Kineto CPU trace's events as the .pftrace export draws them (`pftrace_cpu_event`
//! chooses them): `M` names for the tracks, and the `X` events drawn as CPU slices. Their
//! members are read from each event's text as the reference reads them (Python's `str()`
//! of a name, times through f64).

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::slices::{Annotations, SliceRow};
use super::tracks::{py_str, Id, Tracks};
use crate::sink::perfetto::{Interned, Names};

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
///
/// The events are read in one stretch per core, side by side (parsing them is most of this
/// stage), each stretch interning into tables of its own; the stretches' tables are then
/// merged in trace order, which gives every name the iid one pass in trace order gives it.
/// The slices come in those stretches (joined, they would be held twice for a moment).
pub(super) fn cpu_slices<'a>(
    events: &[&'a str],
    base_ns: i64,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Vec<Vec<SliceRow<'a>>> {
    let cores = crate::threads::cores();
    slices_in_stretches(events, base_ns, tracks, names, interned, cores)
}

/// [`cpu_slices`], reading the events in `parts` stretches.
fn slices_in_stretches<'a>(
    events: &[&'a str],
    base_ns: i64,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
    parts: usize,
) -> Vec<Vec<SliceRow<'a>>> {
    let per = events.len().div_ceil(parts.max(1)).max(1);
    let stretches = crate::threads::on_threads(events.chunks(per).collect(), |stretch| {
        Stretch::read(stretch, base_ns)
    });
    let mut out = Vec::with_capacity(stretches.len());
    for stretch in stretches {
        let events: Vec<u64> = (stretch.event_names.iter())
            .map(|n| names.event(n, &mut interned.event_names))
            .collect();
        let categories: Vec<u64> = (stretch.categories.iter())
            .map(|c| names.category(c, &mut interned.categories))
            .collect();
        for (key, name) in stretch.track_names {
            match key {
                TrackKey::Process(pid) => tracks.process_names.insert(pid, name),
                TrackKey::Thread(pid, tid) => tracks.thread_names.insert((pid, tid), name),
            };
        }
        let mut slices = stretch.slices;
        for slice in &mut slices {
            slice.name_iid = events[slice.name_iid as usize - 1];
            if slice.category_iid != 0 {
                slice.category_iid = categories[slice.category_iid as usize - 1];
            }
        }
        out.push((slices, stretch.threads));
    }
    // Threads are registered once every `M` event has named its track.
    out.into_iter()
        .map(|(mut slices, threads)| {
            for (slice, (pid, tid)) in slices.iter_mut().zip(&threads) {
                slice.uuid = tracks.thread(pid, tid, "", "");
            }
            slices
        })
        .collect()
}

/// A track an `M` event names.
enum TrackKey {
    Process(Id),
    Thread(Id, Id),
}

/// One stretch of the trace's events, read: its slices (name and category iids into its
/// own tables), each slice's (pid, tid), and the track names of its `M` events in order.
struct Stretch<'a> {
    slices: Vec<SliceRow<'a>>,
    threads: Vec<(Id, Id)>,
    event_names: Vec<String>,
    categories: Vec<String>,
    track_names: Vec<(TrackKey, String)>,
}

impl<'a> Stretch<'a> {
    fn read(events: &[&'a str], base_ns: i64) -> Stretch<'a> {
        let name_arg = |args: Option<&RawValue>| -> String {
            args.and_then(|a| serde_json::from_str::<Value>(a.get()).ok())
                .and_then(|v| v.get("name").cloned())
                .map(|v| match v {
                    Value::String(s) => s,
                    other => py_str(Some(&other)),
                })
                .unwrap_or_default()
        };
        let mut names = Names::default();
        let mut stretch = Stretch {
            slices: Vec::new(),
            threads: Vec::new(),
            event_names: Vec::new(),
            categories: Vec::new(),
            track_names: Vec::new(),
        };
        for text in events {
            let Ok(e) = serde_json::from_str::<Event>(text) else {
                continue;
            };
            match e.ph.and_then(json_str).as_deref() {
                Some("M") => {
                    let key = match e.name.and_then(json_str).as_deref() {
                        Some("process_name") => TrackKey::Process(Id::from_json(e.pid.as_ref())),
                        Some("thread_name") => TrackKey::Thread(
                            Id::from_json(e.pid.as_ref()),
                            Id::from_json(e.tid.as_ref()),
                        ),
                        _ => continue,
                    };
                    stretch.track_names.push((key, name_arg(e.args)));
                }
                Some("X") => {
                    let cat = e.cat.map_or(Cow::Borrowed(""), py_text);
                    let ts = base_ns + (as_f64(e.ts) * 1000.0).round_ties_even() as i64;
                    let end = ts + (as_f64(e.dur) * 1000.0).round_ties_even() as i64;
                    stretch
                        .threads
                        .push((Id::from_json(e.pid.as_ref()), Id::from_json(e.tid.as_ref())));
                    let args = e.args.map(RawValue::get).filter(|a| has_members(a));
                    let name = e.name.map_or(Cow::Borrowed(""), py_text);
                    stretch.slices.push(SliceRow {
                        ts,
                        end,
                        uuid: 0,
                        name_iid: names.event(&name, &mut stretch.event_names),
                        category_iid: match cat.is_empty() {
                            true => 0,
                            false => names.category(&cat, &mut stretch.categories),
                        },
                        annotations: Annotations::None,
                        json: args,
                        gpu_correlation: Vec::new(),
                    });
                }
                _ => {}
            }
        }
        stretch
    }
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

    /// Read in several stretches, the slices, their iids, the name tables and the tracks
    /// are what one pass in trace order gives: names first seen in a later stretch, names
    /// seen again across a boundary, a thread named after its first slice.
    #[test]
    fn stretches_read_as_one_pass_does() {
        let text = r#"{"traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 2, "ts": 1, "dur": 2},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 2, "ts": 1, "dur": 2},
            {"ph": "X", "cat": "user_annotation", "name": "b", "pid": 1, "tid": 3, "ts": 2,
             "dur": 1, "args": {"x": 1}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "t3"}},
            {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 3, "dur": 1},
            {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 4, "tid": 4, "ts": 4, "dur": 1},
            {"ph": "M", "name": "process_name", "pid": 4, "args": {"name": "p4"}},
            {"ph": "X", "cat": "python_function", "name": "a", "pid": 1, "tid": 3, "ts": 5,
             "dur": 1}
        ], "baseTimeNanoseconds": 1000000}"#;
        let path = std::path::Path::new("t.json");
        let (_, events) =
            crate::catalog::cpu_trace::TraceDoc::parse(text.as_bytes(), path).unwrap();
        // as pftrace_cpu_event chooses them: all but the kernel
        let events: Vec<&str> = (events.iter().map(|e| e.get()))
            .filter(|e| !e.contains(r#""kernel""#))
            .collect();
        let read = |parts| {
            let (mut tracks, mut names, mut interned) =
                (Tracks::default(), Names::default(), Interned::default());
            let slices: Vec<_> =
                slices_in_stretches(&events, 7, &mut tracks, &mut names, &mut interned, parts)
                    .into_iter()
                    .flatten()
                    .map(|s| (s.ts, s.end, s.uuid, s.name_iid, s.category_iid, s.json))
                    .collect();
            (
                slices,
                interned.event_names,
                interned.categories,
                tracks.tracks,
            )
        };
        let one = read(1);
        assert_eq!(one.0.len(), 5, "every X event");
        assert_eq!(one.1, ["a", "b", "c"]);
        assert_eq!(one.2, ["cpu_op", "user_annotation", "python_function"]);
        for parts in 2..=8 {
            assert!(read(parts) == one, "{parts} stretches");
        }
    }

    #[test]
    fn a_null_member_is_kept_and_a_missing_one_is_none() {
        let e: Event = serde_json::from_str(r#"{"ph": "X", "name": null}"#).unwrap();
        assert_eq!(e.name.map(RawValue::get), Some("null"));
        assert!(e.cat.is_none() && e.ts.is_none());
    }
}
