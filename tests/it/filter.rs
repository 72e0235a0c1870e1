//! `tracesql export --where / --sql`: narrowing a window before export keeps the trace
//! consistent (docs/export-filter.md): kept ops keep their launches, a flow end whose partner
//! was filtered out goes too, metadata covers only what remains.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tracesql::export::{export_chrome, export_pftrace, ExportConfig, PftraceConfig, RowFilter};
use tracesql::synth::{write_window, SynthConfig};

use crate::export::{differences, read_json};
use crate::support::*;

const GPU_CATS: &[&str] = &[
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "graph_event_node",
    "graph_host_node",
];

/// A synthetic window with every feature on (graphs, lanes, syncs, nccl kernels).
fn synth_window(dir: &Path) -> PathBuf {
    let window = dir.join("w");
    write_window(&SynthConfig::new(4000, 3), &window).unwrap();
    window
}

async fn chrome(window: &Path, output: PathBuf, filter: RowFilter) -> Value {
    export_chrome(&ExportConfig {
        window: window.to_path_buf(),
        output: output.clone(),
        trace_name: Some("t".into()),
        filter,
    })
    .await
    .unwrap();
    read_json(&output)
}

/// The .pftrace of `window` as `filter` narrows it, its packets (decompressed).
async fn pftrace(window: &Path, output: PathBuf, filter: RowFilter) -> Vec<u8> {
    export_pftrace(&PftraceConfig {
        window: window.to_path_buf(),
        output: output.clone(),
        compression_level: 1,
        filter,
        ..PftraceConfig::default()
    })
    .await
    .unwrap();
    tracesql::file::read_gunzipped(&output).unwrap()
}

fn predicate(text: &str) -> RowFilter {
    RowFilter {
        predicate: Some(text.into()),
        ..Default::default()
    }
}

fn events(trace: &Value) -> &Vec<Value> {
    trace["traceEvents"].as_array().unwrap()
}

fn of_cats<'a>(trace: &'a Value, cats: &[&str]) -> Vec<&'a Value> {
    events(trace)
        .iter()
        .filter(|e| e["cat"].as_str().is_some_and(|c| cats.contains(&c)))
        .collect()
}

/// The ids of the launch flows' `s` (starts) and `f` (ends).
fn flow_ids(trace: &Value) -> (BTreeSet<i64>, BTreeSet<i64>) {
    let ids = |ph: &str| {
        events(trace)
            .iter()
            .filter(|e| e["cat"] == "ac2g" && e["ph"] == ph)
            .map(|e| e["id"].as_i64().unwrap())
            .collect()
    };
    (ids("s"), ids("f"))
}

/// Launch-flow consistency against the unfiltered trace: every end has its start, and a
/// start without an end is one that had none before filtering either.
fn assert_flows_paired(filtered: &Value, full: &Value) {
    let (starts, ends) = flow_ids(filtered);
    let (full_starts, full_ends) = flow_ids(full);
    assert!(ends.is_subset(&starts), "an `f` lost its `s`");
    let unmatched: BTreeSet<i64> = starts.difference(&ends).copied().collect();
    let unmatched_before: BTreeSet<i64> = full_starts.difference(&full_ends).copied().collect();
    assert!(
        unmatched.is_subset(&unmatched_before),
        "the filter left {} flow starts without their end",
        unmatched.difference(&unmatched_before).count()
    );
}

/// Every GPU lane named in metadata carries an event, or is the CUDA stream of an op drawn
/// on a resolver lane (the reference names the op's stream as well as its lane).
fn assert_metadata_only_for_what_remains(trace: &Value) {
    let mut drawn: HashSet<(i64, i64)> = HashSet::new();
    for e in events(trace).iter().filter(|e| e["ph"] != "M") {
        if let (Some(pid), Some(tid)) = (e["pid"].as_i64(), e["tid"].as_i64()) {
            drawn.insert((pid, tid));
            if let Some(stream) = e["args"]["original_stream"].as_i64() {
                drawn.insert((pid, stream));
            }
        }
    }
    let lanes = events(trace)
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| Some((e["pid"].as_i64()?, e["tid"].as_i64()?)))
        .filter(|(pid, _)| (0..64).contains(pid));
    for (pid, tid) in lanes {
        assert!(
            drawn.contains(&(pid, tid)),
            "metadata for the empty GPU lane {pid}/{tid}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_predicate_that_keeps_everything_changes_nothing_in_either_format() {
    let dir = tempfile::tempdir().unwrap();
    let window = synth_window(dir.path());
    let full = chrome(&window, dir.path().join("a.json"), RowFilter::default()).await;
    // Not foldable to `true`, so the API calls go through the launched-a-kept-op semi-join.
    let everything = "dur > -1000000000000";
    let all = chrome(&window, dir.path().join("b.json"), predicate(everything)).await;
    assert_eq!(differences(&all, &full), Vec::<String>::new());

    let a = pftrace(&window, dir.path().join("a.pftrace"), RowFilter::default()).await;
    let b = pftrace(&window, dir.path().join("b.pftrace"), predicate(everything)).await;
    assert!(
        a == b,
        "the .pftrace changed under a predicate that keeps everything"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_name_filter_keeps_matching_ops_their_launches_and_paired_flows() {
    let dir = tempfile::tempdir().unwrap();
    let window = synth_window(dir.path());
    let full = chrome(&window, dir.path().join("a.json"), RowFilter::default()).await;
    let nccl = chrome(
        &window,
        dir.path().join("b.json"),
        predicate("name LIKE '%nccl%'"),
    )
    .await;

    let ops = of_cats(&nccl, GPU_CATS);
    let full_nccl = of_cats(&full, GPU_CATS)
        .into_iter()
        .filter(|e| e["name"].as_str().unwrap().contains("nccl"))
        .count();
    assert!(full_nccl > 0, "the synth window has nccl kernels");
    assert_eq!(ops.len(), full_nccl);
    assert!(ops
        .iter()
        .all(|e| e["name"].as_str().unwrap().contains("nccl")));

    // The API calls left are exactly the full trace's calls that launched a kept op.
    let kept: HashSet<i64> = ops
        .iter()
        .filter_map(|e| e["args"]["correlation"].as_i64())
        .collect();
    let correlations = |trace: &Value| -> BTreeSet<i64> {
        of_cats(trace, &["cuda_runtime", "cuda_driver"])
            .iter()
            .map(|e| e["args"]["correlation"].as_i64().unwrap())
            .filter(|c| kept.contains(c))
            .collect()
    };
    let calls = of_cats(&nccl, &["cuda_runtime", "cuda_driver"]).len();
    assert!(calls > 0);
    assert_eq!(correlations(&nccl).len(), calls);
    assert_eq!(correlations(&nccl), correlations(&full));

    assert_flows_paired(&nccl, &full);
    assert_metadata_only_for_what_remains(&nccl);
    // The CPU trace passes through untouched.
    assert_eq!(
        of_cats(&nccl, &["cpu_op"]).len(),
        of_cats(&full, &["cpu_op"]).len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_time_range_keeps_the_ops_the_catalog_counts_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let window = synth_window(dir.path());
    let ctx = open(&window).await;
    let bounds = rows(&ctx, "SELECT min(start_ns), max(start_ns) FROM kernel").await;
    let (lo, hi) = bounds[0].split_once('|').unwrap();
    let (lo, hi): (i64, i64) = (lo.parse().unwrap(), hi.parse().unwrap());
    let (from, to) = (lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3);
    let expected = rows(
        &ctx,
        &format!("SELECT count(*) FROM kernel WHERE start_ns >= {from} AND start_ns < {to}"),
    )
    .await;
    let range = format!("ts >= {from} AND ts < {to}");
    let full = chrome(&window, dir.path().join("a.json"), RowFilter::default()).await;
    let part = chrome(&window, dir.path().join("b.json"), predicate(&range)).await;
    assert_eq!(of_cats(&part, &["kernel"]).len().to_string(), expected[0]);
    assert!(of_cats(&part, &["kernel"]).len() < of_cats(&full, &["kernel"]).len());
    assert_flows_paired(&part, &full);
    assert_metadata_only_for_what_remains(&part);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_can_keep_one_stream() {
    let dir = tempfile::tempdir().unwrap();
    let window = synth_window(dir.path());
    let script = dir.path().join("one_stream.sql");
    std::fs::write(
        &script,
        "-- keep the kernels of the busiest stream\n\
         CREATE OR REPLACE VIEW kernel AS SELECT * FROM kernel WHERE stream_id = \
         (SELECT stream_id FROM kernel GROUP BY stream_id ORDER BY count(*) DESC LIMIT 1);",
    )
    .unwrap();
    let filter = RowFilter {
        script: Some(script),
        ..Default::default()
    };
    let full = chrome(&window, dir.path().join("a.json"), RowFilter::default()).await;
    let one = chrome(&window, dir.path().join("b.json"), filter).await;
    let kernels = of_cats(&one, &["kernel"]);
    assert!(!kernels.is_empty());
    // A kernel moved onto a lane keeps its CUDA stream as original_stream.
    let streams: HashSet<i64> = kernels
        .iter()
        .map(|e| {
            let args = &e["args"];
            args.get("original_stream")
                .unwrap_or(&args["stream"])
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(streams.len(), 1, "{streams:?}");
    assert!(kernels.len() < of_cats(&full, &["kernel"]).len());
    assert_eq!(
        of_cats(&one, &["gpu_memcpy"]).len(),
        of_cats(&full, &["gpu_memcpy"]).len(),
        "the script narrowed only the kernels"
    );
    assert_flows_paired(&one, &full);
}

#[test]
fn a_bad_predicate_or_script_is_one_line_exit_1_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    let missing = dir.path().join("missing.sql");
    let bad_script = dir.path().join("bad.sql");
    std::fs::write(&bad_script, "CREATE OR REPLACE VIEW kernel AS SELEC 1;").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--where".into(), "no_such_column = 1".into()],
            "no_such_column",
        ),
        (vec!["--where".into(), "name LIKE".into()], "--where"),
        (vec!["--where".into(), "1=1) OR (1=1".into()], "unexpected"),
        (
            vec!["--sql".into(), missing.display().to_string()],
            "missing.sql",
        ),
        (
            vec!["--sql".into(), bad_script.display().to_string()],
            "bad.sql",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
            .args(["export", "--window"])
            .arg(tiny_window())
            .arg("--output")
            .arg(&output)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(!output.exists());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_that_reorders_gpu_ops_changes_neither_export() {
    // The plans order rows by their place in the file, which the scan counts below every
    // view (file_row), so a view that shuffles its rows changes nothing. The .pftrace reads
    // the GPU-op tables twice (the held render rows, then the columns only written out) and
    // pairs the reads on that place: shuffled, one kernel's launch geometry would otherwise
    // land on another.
    let dir = tempfile::tempdir().unwrap();
    let window = synth_window(dir.path());
    let script = dir.path().join("shuffle.sql");
    std::fs::write(
        &script,
        "CREATE OR REPLACE VIEW kernel AS \
         SELECT * FROM kernel ORDER BY random() LIMIT 1000000000;",
    )
    .unwrap();
    let shuffled = || RowFilter {
        script: Some(script.clone()),
        ..Default::default()
    };
    let full = chrome(&window, dir.path().join("a.json"), RowFilter::default()).await;
    let reordered = chrome(&window, dir.path().join("b.json"), shuffled()).await;
    assert_eq!(differences(&reordered, &full), Vec::<String>::new());

    let a = pftrace(&window, dir.path().join("a.pftrace"), RowFilter::default()).await;
    let b = pftrace(&window, dir.path().join("b.pftrace"), shuffled()).await;
    assert!(
        a == b,
        "the .pftrace changed under a script that shuffles the kernels"
    );
}

/// Under `--where`, the cuda_sync events keep the window's file order, as the reference
/// writes them: they once came in the order of a hash join (device by device), which also
/// differed between two builds of the same source.
#[tokio::test(flavor = "multi_thread")]
async fn a_filtered_export_writes_syncs_in_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("w");
    write_window(&SynthConfig::new(20_000, 7), &window).unwrap();
    let trace = chrome(
        &window,
        tmp.path().join("f.json"),
        predicate("name like '%gemm%'"),
    )
    .await;
    let written: Vec<i64> = of_cats(&trace, &["cuda_sync"])
        .iter()
        .map(|e| e["args"]["correlation"].as_i64().unwrap())
        .collect();
    let kept: HashSet<i64> = written.iter().copied().collect();
    let ctx = tracesql::catalog::open(&tracesql::window::Window::open(&window).unwrap())
        .await
        .unwrap();
    let in_file_order: Vec<i64> = rows(&ctx, "select correlation_id from cuda_sync")
        .await
        .iter()
        .map(|r| r.parse().unwrap())
        .filter(|c| kept.contains(c))
        .collect();
    assert!(written.len() > 100, "{} sync events", written.len());
    assert_eq!(written, in_file_order);
}
