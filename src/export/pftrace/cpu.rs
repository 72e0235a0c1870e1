//! The Kineto CPU trace as the .pftrace export reads it: `M` names for the tracks, and the
//! `X` events drawn as CPU slices (all but the categories the window itself supplies).

use serde::Deserialize;
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

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(default)]
    ph: Option<Value>,
    #[serde(default)]
    cat: Option<Value>,
    #[serde(default)]
    name: Option<Value>,
    #[serde(default)]
    pid: Option<Value>,
    #[serde(default)]
    tid: Option<Value>,
    #[serde(default)]
    ts: Option<Value>,
    #[serde(default)]
    dur: Option<Value>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

fn as_f64(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
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
        match e.ph.as_ref().and_then(Value::as_str) {
            Some("M") => match e.name.as_ref().and_then(Value::as_str) {
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
                if let Some(cat) = e.cat.as_ref().and_then(Value::as_str) {
                    if NON_CPU_CATS.contains(&cat) {
                        continue;
                    }
                }
                let ts = base_ns + (as_f64(e.ts.as_ref()) * 1000.0).round_ties_even() as i64;
                let end = ts + (as_f64(e.dur.as_ref()) * 1000.0).round_ties_even() as i64;
                threads.push((Id::from_json(e.pid.as_ref()), Id::from_json(e.tid.as_ref())));
                let args = e.args.map(RawValue::get).filter(|a| {
                    a.starts_with('{')
                        && serde_json::from_str::<Value>(a)
                            .is_ok_and(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                });
                let name = e.name.as_ref().map_or(String::new(), |v| py_str(Some(v)));
                let cat = e.cat.as_ref().map_or(String::new(), |v| py_str(Some(v)));
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
