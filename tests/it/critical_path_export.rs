//! `export --critical-path`: the critical path drawn over the exported trace, on the small
//! traces of `critical_path` whose path is known by construction.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{json, Value};

use crate::critical_path::{report, serial_chain, PID};
use crate::support::succeeded;

/// `export --critical-path` over the serial chain: its path as a track of its own, in
/// Chrome JSON and in .pftrace, and Chrome arrows where the path changes track.
#[test]
fn the_export_draws_the_path_on_its_track_with_arrows_between_tracks() {
    let tmp = tempfile::tempdir().unwrap();
    let window = serial_chain(tmp.path());
    let rows = report(&window, "critical_path");
    let export = |name: &str, marked: bool| {
        let output = tmp.path().join(name);
        let mut command = Command::new(env!("CARGO_BIN_EXE_tracesql"));
        command
            .arg("export")
            .arg("-w")
            .arg(&window)
            .arg("-o")
            .arg(&output);
        if marked {
            command.arg("--critical-path");
        }
        succeeded(&mut command);
        output
    };
    let events = |path: &std::path::Path| -> Vec<Value> {
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        doc["traceEvents"].as_array().unwrap().clone()
    };
    let plain = events(&export("plain.json", false));
    assert!(!plain.iter().any(|e| e["cat"] == "critical_path"));

    let marked = events(&export("marked.json", true));
    // the track: the report's segments in order, each flagged, adding up to the path
    let segments: Vec<&Value> = (marked.iter())
        .filter(|e| e["ph"] == "X" && e["pid"] == "Critical path")
        .collect();
    let names: Vec<&str> = segments
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = (rows.iter())
        .map(|r| if r[5].is_empty() { &r[3] } else { &r[5] }.as_str())
        .collect();
    assert_eq!(names, want);
    assert!(segments.iter().all(|e| e["args"]["critical"] == 1
        && e["tid"] == "ProfilerStep#1"
        && e["cat"] == "critical_path"));
    let total: i64 = segments
        .iter()
        .map(|e| e["args"]["dur_ns"].as_i64().unwrap())
        .sum();
    assert_eq!(total / 1000, 240);
    // the arrows: the launch from the CPU thread to stream 7, the sync back from it
    let flow = |ph: &str| -> Vec<(i64, (Value, Value), f64)> {
        (marked.iter())
            .filter(|e| e["cat"] == "critical_path" && e["ph"] == ph)
            .map(|e| {
                (
                    e["id"].as_i64().unwrap(),
                    (e["pid"].clone(), e["tid"].clone()),
                    e["ts"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let (starts, ends) = (flow("s"), flow("f"));
    let hops: Vec<((Value, Value), (Value, Value))> = (starts.iter())
        .map(|(id, from, _)| {
            let to = ends
                .iter()
                .find(|(i, _, _)| i == id)
                .expect("each arrow has its end");
            (from.clone(), to.1.clone())
        })
        .collect();
    let (cpu, gpu) = ((json!(PID), json!(PID)), (json!(0), json!(7)));
    assert_eq!(hops, vec![(cpu.clone(), gpu.clone()), (gpu, cpu)]);
    // the launch's arrow lands at the kernel's start
    let kernel = marked
        .iter()
        .find(|e| e["name"] == "mul_kernel" && e["ph"] == "X")
        .unwrap();
    assert_eq!(ends[0].2, kernel["ts"].as_f64().unwrap());

    // .pftrace: the same segments on the path's track, flagged by a debug annotation
    let pftrace = export("marked.pftrace", true);
    let packets = crate::perfetto::decode(&crate::perfetto::gunzip(&pftrace));
    assert_eq!(crate::perfetto::structure(&packets), Vec::<String>::new());
    let named = |uuid: u64| {
        packets
            .iter()
            .filter_map(|p| p.track_descriptor.as_ref())
            .any(|d| {
                d.uuid == Some(uuid)
                    && d.thread.as_ref().and_then(|t| t.thread_name.as_deref())
                        == Some("ProfilerStep#1")
            })
    };
    let event_names: std::collections::HashMap<u64, String> = (packets.iter())
        .filter_map(|p| p.interned_data.as_ref())
        .flat_map(|i| i.event_names.iter())
        .map(|n| (n.iid.unwrap(), n.name.clone().unwrap()))
        .collect();
    let begins: Vec<&tracesql::sink::perfetto::proto::TrackEvent> = (packets.iter())
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.r#type == Some(1) && named(e.track_uuid.unwrap()))
        .collect();
    let names: Vec<&str> = begins
        .iter()
        .map(|e| event_names[&e.name_iid.unwrap()].as_str())
        .collect();
    assert_eq!(names, want);
    assert!(begins.iter().all(|e| e
        .debug_annotations
        .iter()
        .any(|a| { a.name.as_deref() == Some("critical") && a.int_value == Some(1) })));
}

/// The path's segments are exported in path order, step by step: the segments' plan ends
/// with its sort, with nothing above it that deals batches out to the cores (a round-robin
/// gathered back in any order interleaved the steps of a 1 M-event path from run to run).
#[test]
fn the_exported_path_is_in_step_and_position_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (window, output) = (tmp.path().join("w"), tmp.path().join("marked.json"));
    let tracesql = || Command::new(env!("CARGO_BIN_EXE_tracesql"));
    let synth = [
        "synth", "--events", "20000", "--seed", "3", "--steps", "--out",
    ];
    succeeded(tracesql().args(synth).arg(&window));
    let export = succeeded(
        tracesql()
            .args([
                "export",
                "--critical-path",
                "--explain",
                "critical_path_segment",
            ])
            .arg("-w")
            .arg(&window)
            .arg("-o")
            .arg(&output),
    );
    let plan = String::from_utf8_lossy(&export.stderr);
    let sort = plan.find("Sort").expect("the segments' plan sorts");
    assert!(
        !plan[..sort].contains("Repartition"),
        "batches dealt out above the sort:\n{plan}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    let places: Vec<(i64, i64)> = (doc["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "X" && e["pid"] == "Critical path")
        .map(|e| {
            let arg = |name: &str| e["args"][name].as_i64().unwrap();
            (arg("step"), arg("position"))
        })
        .collect();
    let steps = places.iter().map(|p| p.0).collect::<BTreeSet<_>>();
    assert!(steps.len() >= 4, "too few steps to tell: {steps:?}");
    assert!(
        places.windows(2).all(|w| w[0] < w[1]),
        "out of order: {places:?}"
    );
}
