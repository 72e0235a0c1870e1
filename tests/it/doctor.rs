//! `tracesql doctor` and the checks of sql/doctor/: each check fires on a window built to
//! hold exactly N of its defects, reports N and the first defect as its example; a clean
//! window (and a synthetic one) fires no error; the JSON is parseable; over an archive the
//! example names its window first.

use std::path::Path;
use std::process::Command;

use tracesql::doctor::{report, Finding, Severity};
use tracesql::window::Window;

use crate::support::*;

/// Window start; every time below is an offset from it.
const T0: i64 = 1_759_300_000_000_000_000;

#[derive(Clone)]
struct Call {
    cbid: i64,
    ts: i64,
    dur: i64,
    corr: i64,
}

#[derive(Clone)]
struct Op {
    ts: i64,
    dur: i64,
    stream: i64,
    corr: i64,
    graph_id: i64,
}

/// A window described row by row, written by [`Spec::write`].
#[derive(Clone)]
struct Spec {
    calls: Vec<Call>,
    ops: Vec<Op>,
    /// external_correlation rows: (external id, correlation id)
    ext: Vec<(i64, i64)>,
    /// cpu_op events: (external id, ts unix ns)
    cpu_ops: Vec<(i64, i64)>,
    /// `baseTimeNanoseconds`, None: left out (times are then written absolute)
    base_ns: Option<i64>,
    cpu_trace: bool,
    /// window_info (start_ns, boundary_ns)
    range: (i64, i64),
}

/// `n` launches, each a cudaLaunchKernel (cbid 211) whose kernel runs after it on stream 7,
/// one after another, each call under a cpu_op with its external id. Fires no check.
fn clean(n: i64) -> Spec {
    let mut spec = Spec {
        calls: Vec::new(),
        ops: Vec::new(),
        ext: Vec::new(),
        cpu_ops: Vec::new(),
        base_ns: Some(T0 - 5_000_000_000),
        cpu_trace: true,
        range: (T0, T0 + 10_000 * n + 100_000),
    };
    for i in 0..n {
        let corr = i + 1;
        let ts = T0 + 10_000 * i + 1_000;
        spec.calls.push(Call {
            cbid: 211,
            ts,
            dur: 500,
            corr,
        });
        spec.ops.push(Op {
            ts: ts + 2_000,
            dur: 1_000,
            stream: 7,
            corr,
            graph_id: 0,
        });
        spec.ext.push((100 + i, corr));
        spec.cpu_ops.push((100 + i, ts - 100));
    }
    spec
}

impl Spec {
    fn write(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let c = &self.calls;
        let col = |f: &dyn Fn(&Call) -> i64| i64s(&c.iter().map(f).collect::<Vec<_>>());
        if !c.is_empty() {
            write_parquet(
                &dir.join("cuda_runtime.parquet"),
                vec![
                    ("cbid", col(&|c| c.cbid)),
                    ("start_ns", col(&|c| c.ts)),
                    ("end_ns", col(&|c| c.ts + c.dur)),
                    ("process_id", col(&|_| 7)),
                    ("thread_id", col(&|_| 1)),
                    ("correlation_id", col(&|c| c.corr)),
                ],
            );
        }
        let o = &self.ops;
        let col = |f: &dyn Fn(&Op) -> i64| i64s(&o.iter().map(f).collect::<Vec<_>>());
        if !o.is_empty() {
            let names: Vec<&str> = o.iter().map(|_| "k").collect();
            let annotations: Vec<Option<&str>> = o.iter().map(|_| None).collect();
            let mut columns = vec![
                ("start_ns", col(&|o| o.ts)),
                ("end_ns", col(&|o| o.ts + o.dur)),
                ("device_id", col(&|_| 0)),
                ("context_id", col(&|_| 1)),
                ("stream_id", col(&|o| o.stream)),
                ("correlation_id", col(&|o| o.corr)),
                ("graph_node_id", col(&|o| o.graph_id << 32)),
                ("graph_id", col(&|o| o.graph_id)),
                ("name", strs(&names)),
                (
                    "annotation",
                    std::sync::Arc::new(datafusion::arrow::array::StringArray::from(annotations))
                        as _,
                ),
            ];
            for one in [
                "grid_x",
                "grid_y",
                "grid_z",
                "block_x",
                "block_y",
                "block_z",
                "registers_per_thread",
                "static_shared_memory",
                "dynamic_shared_memory",
                "priority",
                "queued",
                "channel",
                "channel_type",
            ] {
                columns.push((one, col(&|_| 1)));
            }
            write_parquet(&dir.join("kernel.parquet"), columns);
        }
        if !self.ext.is_empty() {
            let e = &self.ext;
            write_parquet(
                &dir.join("external_correlation.parquet"),
                vec![
                    (
                        "external_id",
                        i64s(&e.iter().map(|x| x.0).collect::<Vec<_>>()),
                    ),
                    (
                        "correlation_id",
                        i64s(&e.iter().map(|x| x.1).collect::<Vec<_>>()),
                    ),
                ],
            );
        }
        write_parquet(
            &dir.join("window_info.parquet"),
            vec![
                ("window_id", i64s(&[1])),
                ("start_ns", i64s(&[self.range.0])),
                ("boundary_ns", i64s(&[self.range.1])),
                ("schema_version", strs(&["1"])),
            ],
        );
        if self.cpu_trace {
            let base = self.base_ns.unwrap_or(0);
            let micros = |ns: i64| {
                let d = ns - base;
                let sign = if d < 0 { "-" } else { "" };
                format!("{sign}{}.{:03}", d.abs() / 1000, d.abs() % 1000)
            };
            let events: Vec<String> = self
                .cpu_ops
                .iter()
                .map(|(ext, ts)| {
                    format!(
                        r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":1,"ts":{},"dur":1,"args":{{"External id":{ext}}}}}"#,
                        micros(*ts)
                    )
                })
                .collect();
            let base_member = self
                .base_ns
                .map(|b| format!(r#""baseTimeNanoseconds": {b}, "#))
                .unwrap_or_default();
            std::fs::write(
                dir.join("cpu_trace.json"),
                format!(r#"{{{base_member}"traceEvents": [{}]}}"#, events.join(",")),
            )
            .unwrap();
        }
    }
}

async fn doctor(dir: &Path) -> Vec<Finding> {
    let window = Window::open(dir).unwrap();
    let ctx = tracesql::catalog::open(&window).await.unwrap();
    tracesql::doctor::run(&ctx, &window.partition_keys)
        .await
        .unwrap()
}

fn finding<'a>(findings: &'a [Finding], check: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.check.name == check)
        .unwrap_or_else(|| panic!("no check {check}"))
}

/// The checks that fired, with their counts, by name.
fn fired(findings: &[Finding]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = findings
        .iter()
        .filter(|f| f.fired())
        .map(|f| (f.check.name.to_string(), f.count))
        .collect();
    out.sort();
    out
}

fn example(findings: &[Finding], check: &str) -> String {
    let f = finding(findings, check);
    report::example_text(f.example.as_ref().expect("an example")).unwrap()
}

/// Write `spec`, run the doctor; the checks that fired must be exactly `expected`.
async fn run_spec(spec: &Spec, expected: &[(&str, u64)]) -> Vec<Finding> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    spec.write(&dir);
    let findings = doctor(&dir).await;
    let mut want: Vec<(String, u64)> = expected.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    want.sort();
    assert_eq!(fired(&findings), want);
    findings
}

fn tracesql(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test]
async fn a_clean_window_fires_nothing() {
    run_spec(&clean(5), &[]).await;
}

#[tokio::test]
async fn duplicate_correlation_ids_are_counted_per_id() {
    let mut spec = clean(6);
    for (i, corr) in [5, 3].into_iter().enumerate() {
        spec.calls.push(Call {
            cbid: 211,
            ts: T0 + 90_000 + i as i64 * 1_000,
            dur: 10,
            corr,
        });
    }
    // the duplicated calls also launch nothing of their own: both pair with an op
    let f = run_spec(&spec, &[("duplicate_correlation_id", 2)]).await;
    let e = example(&f, "duplicate_correlation_id");
    assert!(e.starts_with("correlation_id=3, calls=2, "), "{e}");
    assert_eq!(
        finding(&f, "duplicate_correlation_id").check.severity,
        Severity::Error
    );
}

#[tokio::test]
async fn negative_durations_are_errors() {
    let mut spec = clean(5);
    spec.ops[3].dur = -40;
    spec.ops[1].dur = -10;
    spec.calls[4].dur = -1;
    let f = run_spec(&spec, &[("negative_duration", 3)]).await;
    let first = spec.ops[1].ts;
    assert_eq!(
        example(&f, "negative_duration"),
        format!("ts={first}, kind=kernel, name=k, dur=-10, correlation_id=2")
    );
}

#[tokio::test]
async fn zero_durations_are_warnings() {
    let mut spec = clean(5);
    spec.calls[2].dur = 0;
    spec.ops[4].dur = 0;
    let f = run_spec(&spec, &[("zero_duration", 2)]).await;
    let first = spec.calls[2].ts;
    assert_eq!(
        example(&f, "zero_duration"),
        format!("ts={first}, kind=runtime, name=cudaLaunchKernel, dur=0, correlation_id=3")
    );
}

#[tokio::test]
async fn eager_ops_without_a_launching_call_are_warnings_graph_nodes_infos() {
    let mut spec = clean(5);
    spec.ops[2].corr = 0;
    spec.ops[4].corr = 999;
    // the calls that launched them now launch nothing
    spec.calls[2].cbid = 1; // cudaDriverGetVersion: not a launch
    spec.calls[4].cbid = 1;
    let mut graph = spec.ops[0].clone();
    graph.ts = T0 + 95_000;
    graph.corr = 0;
    graph.graph_id = 3;
    spec.ops.push(graph);
    let f = run_spec(
        &spec,
        &[("gpu_op_without_launch", 2), ("graph_op_without_launch", 1)],
    )
    .await;
    let first = spec.ops[2].ts;
    assert_eq!(
        example(&f, "gpu_op_without_launch"),
        format!(
            "ts={first}, kind=kernel, name=k, dur=1000, device_id=0, stream_id=7, correlation_id=0"
        )
    );
    assert_eq!(
        finding(&f, "graph_op_without_launch").check.severity,
        Severity::Info
    );
    assert_eq!(
        example(&f, "graph_op_without_launch"),
        format!(
            "ts={}, kind=kernel, name=k, dur=1000, device_id=0, stream_id=7, correlation_id=0, graph_id=3, graph_node_id={}",
            T0 + 95_000,
            3_i64 << 32
        )
    );
}

#[tokio::test]
async fn launches_without_a_gpu_op_are_counted() {
    let mut spec = clean(5);
    spec.ops.remove(3);
    spec.ops.remove(1);
    let f = run_spec(&spec, &[("launch_without_gpu_op", 2)]).await;
    let first = spec.calls[1].ts;
    assert_eq!(
        example(&f, "launch_without_gpu_op"),
        format!("ts={first}, domain=runtime, name=cudaLaunchKernel, dur=500, process_id=7, thread_id=1, correlation_id=2")
    );
}

#[tokio::test]
async fn ops_outside_the_window_are_counted() {
    let mut spec = clean(5);
    // the first op before the start, the last at the boundary (exclusive)
    spec.ops[0].ts = T0 - 50;
    spec.ops[4].ts = spec.range.1;
    let f = run_spec(&spec, &[("op_outside_window", 2)]).await;
    assert_eq!(
        example(&f, "op_outside_window"),
        format!(
            "ts={}, kind=kernel, name=k, dur=1000, correlation_id=1, window_start_ns={T0}, window_boundary_ns={}",
            T0 - 50,
            spec.range.1
        )
    );
}

#[tokio::test]
async fn overlaps_on_a_stream_report_rows_and_the_nanoseconds_cut() {
    let mut spec = clean(5);
    // ops 1 and 3 end 100 and 250 ns into the next op (which starts 9 us after their start)
    spec.ops[1].dur = 10_100;
    spec.ops[3].dur = 10_250;
    let f = run_spec(&spec, &[("stream_overlap", 2)]).await;
    let overlap = finding(&f, "stream_overlap");
    assert_eq!(overlap.total, Some(350));
    let e = example(&f, "stream_overlap");
    assert!(
        e.contains(", dur=10000, cut_ns=100, correlation_id=2"),
        "{e}"
    );
    // another stream does not count
    let mut spec = clean(5);
    spec.ops[1].dur = 10_100;
    spec.ops[2].stream = 8;
    run_spec(&spec, &[]).await;
}

#[tokio::test]
async fn unknown_cbids_are_one_row_per_id() {
    let mut spec = clean(5);
    spec.calls[0].cbid = 99_999;
    spec.calls[1].cbid = 88_888;
    spec.calls[3].cbid = 99_999;
    let f = run_spec(&spec, &[("unknown_cbid", 2)]).await;
    assert_eq!(
        example(&f, "unknown_cbid"),
        "domain=runtime, cbid=88888, name=cbid_88888, calls=1"
    );
}

#[tokio::test]
async fn external_ids_without_a_cpu_op_are_counted() {
    let mut spec = clean(5);
    spec.cpu_ops.remove(4);
    spec.cpu_ops.remove(2);
    // an external id of a call that is not in the window does not count
    spec.ext.push((500, 77));
    let f = run_spec(&spec, &[("external_id_without_cpu_op", 2)]).await;
    let first = spec.calls[2].ts;
    assert_eq!(
        example(&f, "external_id_without_cpu_op"),
        format!("api_ts={first}, external_id=102, correlation_id=3, api_domain=runtime, api_name=cudaLaunchKernel")
    );
}

#[tokio::test]
async fn a_missing_cpu_trace_is_one_warning_and_silences_the_external_id_check() {
    let mut spec = clean(5);
    spec.cpu_trace = false;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    spec.write(&dir);
    let f = doctor(&dir).await;
    assert_eq!(fired(&f), vec![("cpu_trace_missing".to_string(), 1)]);
    assert_eq!(
        example(&f, "cpu_trace_missing"),
        format!("dir={}", dir.display())
    );
}

#[tokio::test]
async fn a_cpu_trace_without_base_is_a_warning_when_its_times_are_absolute() {
    let mut spec = clean(5);
    spec.base_ns = None;
    let f = run_spec(&spec, &[("cpu_trace_without_base", 1)]).await;
    assert!(
        example(&f, "cpu_trace_without_base").ends_with("cpu_trace.json"),
        "{}",
        example(&f, "cpu_trace_without_base")
    );
}

#[tokio::test]
async fn cpu_and_gpu_clocks_far_apart_are_an_error() {
    let mut spec = clean(5);
    // every CPU event an hour early (a wrong base): the external ids still pair
    for op in &mut spec.cpu_ops {
        op.1 -= 3_600_000_000_000;
    }
    let f = run_spec(&spec, &[("clock_domain_gap", 1)]).await;
    let (cpu_start, cpu_end) = (spec.cpu_ops[0].1, spec.cpu_ops[4].1 + 1_000);
    let (gpu_start, gpu_end) = (spec.calls[0].ts, spec.ops[4].ts + spec.ops[4].dur);
    assert_eq!(
        example(&f, "clock_domain_gap"),
        format!(
            "cpu_start_ns={cpu_start}, cpu_end_ns={cpu_end}, gpu_start_ns={gpu_start}, gpu_end_ns={gpu_end}, gap_ns={}",
            gpu_start - cpu_end
        )
    );
    // 9 s apart is no clock-domain bug
    let mut spec = clean(5);
    for op in &mut spec.cpu_ops {
        op.1 -= 9_000_000_000;
    }
    run_spec(&spec, &[]).await;
}

#[test]
fn the_command_exits_0_on_a_clean_window_and_1_on_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    clean(5).write(&good);
    let out = tracesql(&["doctor", "--window", good.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("duplicate_correlation_id"), "{table}");

    let mut spec = clean(5);
    spec.ops[0].dur = -1;
    let bad = tmp.path().join("bad");
    spec.write(&bad);
    let out = tracesql(&["doctor", "--window", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("error:"), "no error line: {stderr}");

    // a warning alone keeps the exit status 0
    let mut spec = clean(5);
    spec.calls[0].dur = 0;
    let warned = tmp.path().join("warned");
    spec.write(&warned);
    let out = tracesql(&["doctor", "--window", warned.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn json_is_a_list_of_checks_with_their_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let mut spec = clean(5);
    spec.ops[1].dur = 10_100;
    let dir = tmp.path().join("w");
    spec.write(&dir);
    let out = tracesql(&["doctor", "-w", dir.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success());
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), tracesql::doctor::checks().unwrap().len());
    for item in list {
        for field in ["check", "severity", "count", "example", "summary", "total"] {
            assert!(item.get(field).is_some(), "{field} in {item}");
        }
        let severity = item["severity"].as_str().unwrap();
        assert!(["error", "warning", "info"].contains(&severity), "{item}");
    }
    let overlap = list
        .iter()
        .find(|i| i["check"] == "stream_overlap")
        .unwrap();
    assert_eq!(overlap["count"], 1);
    assert_eq!(overlap["total"]["cut_ns"], 100);
    assert_eq!(overlap["example"]["cut_ns"], 100);
    assert_eq!(overlap["example"]["correlation_id"], 2);
    let quiet = list
        .iter()
        .find(|i| i["check"] == "negative_duration")
        .unwrap();
    assert_eq!(quiet["count"], 0);
    assert!(quiet["example"].is_null());
}

#[tokio::test]
async fn over_an_archive_examples_name_their_window_first() {
    let tmp = tempfile::tempdir().unwrap();
    clean(5).write(&tmp.path().join("rank=0/window_id=000001"));
    let mut spec = clean(5);
    spec.ops[2].dur = -5;
    spec.cpu_trace = false;
    spec.write(&tmp.path().join("rank=1/window_id=000002"));
    let f = doctor(tmp.path()).await;
    assert_eq!(
        fired(&f),
        vec![
            ("cpu_trace_missing".to_string(), 1),
            ("negative_duration".to_string(), 1)
        ]
    );
    let e = example(&f, "negative_duration");
    assert!(e.starts_with("rank=1, window_id=2, ts="), "{e}");
    let e = example(&f, "cpu_trace_missing");
    assert!(e.starts_with("rank=1, window_id=2, dir="), "{e}");
    // correlation ids restart per window: the same ids in two windows are no duplicates
    assert_eq!(finding(&f, "duplicate_correlation_id").count, 0);
}

#[tokio::test]
async fn a_synthetic_window_fires_no_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    tracesql::synth::write_window(&tracesql::synth::SynthConfig::new(20_000, 3), &dir).unwrap();
    let f = doctor(&dir).await;
    assert!(!tracesql::doctor::has_errors(&f), "{:?}", fired(&f));
}

#[tokio::test]
async fn the_checks_plan_against_empty_canonical_tables() {
    for partitions in [vec![], vec!["host".to_string(), "window_id".to_string()]] {
        let window = Window::empty(Path::new("/nonexistent"), partitions.clone());
        let ctx = tracesql::catalog::open(&window).await.unwrap();
        let f = tracesql::doctor::run(&ctx, &partitions).await.unwrap();
        assert_eq!(fired(&f), vec![], "{partitions:?}");
        for check in tracesql::doctor::checks().unwrap() {
            let schema = ctx.table(check.name).await.unwrap().schema().clone();
            let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            assert_eq!(names[..partitions.len()], partitions[..], "{}", check.name);
        }
    }
}
