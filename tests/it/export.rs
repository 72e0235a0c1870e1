//! `tracesql export` against the reference exporter: every case of tests/golden/cases.txt
//! (the tiny fixture and synthetic windows with features on and off) is exported and
//! compared with the oracle's output, semantically: parsed JSON, traceEvents as a multiset,
//! floats equal to the nanosecond, the same top-level keys and values.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tracesql::export::{export_chrome, ExportConfig};

use crate::support::*;

pub(crate) struct Case {
    pub name: String,
    seed: String,
    events: String,
    without: String,
}

pub(crate) fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

pub(crate) fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(golden_dir().join("cases.txt")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(f.len(), 4, "cases.txt line `{l}`");
            Case {
                name: f[0].into(),
                seed: f[1].into(),
                events: f[2].into(),
                without: f[3].into(),
            }
        })
        .collect()
}

/// The case's window: the fixture, or `tracesql synth` run again with the case's settings.
pub(crate) fn window_of(case: &Case, scratch: &Path) -> PathBuf {
    if case.seed == "fixture" {
        return Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(format!("{}_window", case.name));
    }
    let dir = scratch.join(&case.name);
    let mut args = vec![
        "synth".to_string(),
        "--out".into(),
        dir.display().to_string(),
        "--events".into(),
        case.events.clone(),
        "--seed".into(),
        case.seed.clone(),
    ];
    if case.without != "-" {
        args.push("--without".into());
        args.push(case.without.clone());
    }
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

pub(crate) fn read_json(path: &Path) -> Value {
    let text = tracesql::file::read_gunzipped(path).unwrap();
    serde_json::from_slice(&text).unwrap()
}

/// A value as comparable text: object keys sorted, integers exact, floats to the
/// nanosecond (µs with 3 decimals), so `1` and `1.0` differ but 1 ulp does not.
fn canon(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (k, v) in sorted {
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push(':');
                canon(v, out);
                out.push(',');
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for v in items {
                canon(v, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Number(n) if n.is_f64() => out.push_str(&format!("f{:.3}", n.as_f64().unwrap())),
        other => out.push_str(&other.to_string()),
    }
}

/// Differences between two traces; empty when equal.
pub(crate) fn differences(ours: &Value, reference: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    if keys(ours) != keys(reference) {
        diffs.push(format!(
            "top-level keys {:?} != {:?}",
            keys(ours),
            keys(reference)
        ));
    }
    for (key, value) in reference.as_object().unwrap() {
        if key != "traceEvents" && ours.get(key) != Some(value) {
            diffs.push(format!("top-level `{key}` differs"));
        }
    }
    let multiset = |v: &Value| -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        for e in v["traceEvents"].as_array().unwrap() {
            let mut s = String::new();
            canon(e, &mut s);
            *m.entry(s).or_insert(0) += 1;
        }
        m
    };
    let (a, b) = (multiset(ours), multiset(reference));
    for (event, n) in &a {
        let m = b.get(event).copied().unwrap_or(0);
        if *n > m {
            diffs.push(format!("ours has {} extra: {event}", n - m));
        }
    }
    for (event, n) in &b {
        let m = a.get(event).copied().unwrap_or(0);
        if *n > m {
            diffs.push(format!("ours lacks {}: {event}", n - m));
        }
    }
    diffs
}

/// Where the events of one category and phase come in another order than the reference's
/// (metadata `M` events aside: their order is the one thing left free); empty when none.
pub(crate) fn order_differences(ours: &Value, reference: &Value) -> Vec<String> {
    let sequences = |v: &Value| -> BTreeMap<String, Vec<String>> {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in v["traceEvents"].as_array().unwrap() {
            if e["ph"] == "M" {
                continue;
            }
            let mut s = String::new();
            canon(e, &mut s);
            m.entry(format!("{}/{}", e["cat"], e["ph"]))
                .or_default()
                .push(s);
        }
        m
    };
    let (a, b) = (sequences(ours), sequences(reference));
    let mut diffs = Vec::new();
    for (key, theirs) in &b {
        let Some(mine) = a.get(key) else { continue };
        if let Some(i) = mine.iter().zip(theirs).position(|(x, y)| x != y) {
            diffs.push(format!(
                "{key}: event {i} out of the reference's order: {}",
                mine[i]
            ));
        }
    }
    diffs
}

#[tokio::test(flavor = "multi_thread")]
async fn every_golden_case_equals_the_reference_exporter() {
    let scratch = tempfile::tempdir().unwrap();
    let all = cases();
    assert!(all.len() >= 5, "cases.txt lists the golden cases");
    let mut tasks = Vec::new();
    for case in all {
        let window = window_of(&case, scratch.path());
        let output = scratch.path().join(format!("{}.json.gz", case.name));
        tasks.push(tokio::spawn(async move {
            let config = ExportConfig {
                window,
                output: output.clone(),
                trace_name: Some(case.name.clone()),
                ..ExportConfig::default()
            };
            if let Err(e) = export_chrome(&config).await {
                return Some(format!("{}: {e}", case.name));
            }
            let reference = read_json(&golden_dir().join(format!("{}.json.gz", case.name)));
            let diffs = differences(&read_json(&output), &reference);
            (!diffs.is_empty()).then(|| {
                format!(
                    "{}: {} differences, first: {}",
                    case.name,
                    diffs.len(),
                    diffs[..diffs.len().min(3)].join(" | ")
                )
            })
        }));
    }
    let mut failed = Vec::new();
    for task in tasks {
        failed.extend(task.await.unwrap());
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn the_comparison_sees_a_changed_value_and_a_missing_event() {
    let reference = read_json(&golden_dir().join("tiny.json.gz"));
    assert!(differences(&reference, &reference).is_empty());
    let mut changed = reference.clone();
    changed["traceEvents"][40]["ts"] = Value::from(1.0);
    assert!(!differences(&changed, &reference).is_empty());
    let mut int_for_float = reference.clone();
    let ts = int_for_float["traceEvents"][40]["ts"].as_f64().unwrap();
    int_for_float["traceEvents"][40]["ts"] = Value::from(ts as i64);
    assert!(!differences(&int_for_float, &reference).is_empty());
    let mut missing = reference.clone();
    missing["traceEvents"].as_array_mut().unwrap().pop();
    assert_eq!(differences(&missing, &reference).len(), 1);
}

#[test]
fn an_empty_window_is_one_line_exit_1_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let window = dir.path().join("w");
    std::fs::create_dir_all(&window).unwrap();
    std::fs::copy(
        tiny_window().join("window_info.parquet"),
        window.join("window_info.parquet"),
    )
    .unwrap();
    let cpu = br#"{"baseTimeNanoseconds": 1000, "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]}"#;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, cpu).unwrap();
    std::fs::write(window.join("cpu_trace.json.gz"), gz.finish().unwrap()).unwrap();
    let output = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["export", "--window"])
        .arg(&window)
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("did not contain any duration events"),
        "{stderr}"
    );
    assert!(!output.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn the_cli_writes_plain_json_named_after_the_output_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("tiny.json");
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["export", "--window"])
        .arg(tiny_window())
        .arg("--output")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let raw = std::fs::read(&output).unwrap();
    assert_eq!(raw[0], b'{', "uncompressed for .json");
    let ours: Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(ours["traceName"], Value::from(output.display().to_string()));
    let mut reference = read_json(&golden_dir().join("tiny.json.gz"));
    reference["traceName"] = ours["traceName"].clone();
    assert_eq!(differences(&ours, &reference), Vec::<String>::new());
}

/// Export plans number each table's rows in file order (ROW_NUMBER() OVER ()), and the
/// .pftrace writes API slices in that order. With many small batches on several partitions,
/// the numbering must still be the file's order, not the order batches happen to be
/// scheduled in (a filter pushed below the numbering once dealt them round-robin).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn export_plans_number_rows_in_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    tracesql::synth::write_window(&tracesql::synth::SynthConfig::new(20000, 3), &dir).unwrap();
    for _ in 0..3 {
        assert_numbered_in_file_order(&dir).await;
    }
}

async fn assert_numbered_in_file_order(dir: &Path) {
    let window = tracesql::window::Window::open(dir).unwrap();
    let ctx = tracesql::export::plan_session(&window).await.unwrap();
    ctx.sql("SET datafusion.execution.batch_size = 64")
        .await
        .unwrap();
    ctx.sql("SET datafusion.execution.target_partitions = 4")
        .await
        .unwrap();
    let file_order = rows(&ctx, "SELECT correlation_id, start_ns FROM cuda_runtime").await;
    let numbered = rows(
        &ctx,
        "SELECT pos, correlation_id, start_ns FROM _chrome_api_row \
         WHERE cat = 'cuda_runtime' ORDER BY pos",
    )
    .await;
    assert!(numbered.len() > 500, "{} runtime rows", numbered.len());
    for row in &numbered {
        let (pos, call) = row.split_once('|').unwrap();
        let ord: usize = pos.parse().unwrap();
        assert_eq!(file_order[ord - 1], call, "row numbered {ord}");
    }
}

/// The same window exports to the same bytes every time: the plans that read held rows (whose
/// order within a partition depends on how the threads ran) put their events in the
/// reference's order.
#[tokio::test(flavor = "multi_thread")]
async fn the_same_window_exports_to_the_same_bytes_every_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    tracesql::synth::write_window(&tracesql::synth::SynthConfig::new(20000, 5), &dir).unwrap();
    let mut outputs = Vec::new();
    for run in 0..4 {
        let output = tmp.path().join(format!("run{run}.json"));
        tracesql::export::export_chrome(&tracesql::export::ExportConfig {
            window: dir.clone(),
            output: output.clone(),
            trace_name: Some("t".into()),
            filter: Default::default(),
        })
        .await
        .unwrap();
        outputs.push(std::fs::read(&output).unwrap());
    }
    for (run, bytes) in outputs.iter().enumerate().skip(1) {
        assert!(*bytes == outputs[0], "run {run} differs from run 0");
    }
}
