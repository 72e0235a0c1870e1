//! The reports of sql/reports/ on windows whose answers are known by construction: a small
//! Kineto trace (written here, imported as a window) with kernels, a copy, launches, CPU
//! operators and annotations placed so that every number below can be worked out by hand
//! (the comments do it). Times in the trace are µs; the reports answer in ns.

use std::path::{Path, PathBuf};
use std::process::Command;

use datafusion::arrow::array::{Array, ArrayRef, Float64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;
use serde_json::{json, Value};
use tracesql::window::Window;

use crate::support::{import_trace, rows};

const PID: i64 = 4242;
const TID: i64 = 4243;
/// The trace's time origin, µs (the events below are offsets from it).
const T0: i64 = 1_700_000_000_000_000;

/// A launch call and the GPU op it launched, with the CPU operator it was issued under.
struct Launch {
    corr: i64,
    api: (&'static str, i64),
    api_ts: i64,
    api_dur: i64,
    op: (&'static str, &'static str),
    stream: i64,
    ts: i64,
    dur: i64,
    external_id: i64,
}

fn launches() -> Vec<Launch> {
    let l = |corr, api, api_ts, api_dur, op, stream, ts, dur, external_id| Launch {
        corr,
        api,
        api_ts,
        api_dur,
        op,
        stream,
        ts,
        dur,
        external_id,
    };
    let launch = ("cudaLaunchKernel", 211);
    vec![
        l(1, launch, 990, 5, ("kernel", "gemm_a"), 7, 1000, 100, 10),
        l(2, launch, 1120, 5, ("kernel", "gemm_a"), 7, 1150, 50, 10),
        l(
            3,
            launch,
            1000,
            5,
            ("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            13,
            1210,
            100,
            11,
        ),
        l(4, launch, 1100, 5, ("kernel", "gemm_b"), 7, 1205, 10, 12),
        l(
            5,
            ("cudaMemcpyAsync", 41),
            1300,
            10,
            ("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)"),
            7,
            1400,
            20,
            13,
        ),
        l(6, launch, 1350, 60, ("kernel", "gemm_b"), 7, 1500, 10, 12),
    ]
}

fn x(cat: &str, name: &str, pid: i64, tid: i64, ts: i64, dur: i64, args: Value) -> Value {
    json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
           "ts": T0 + ts, "dur": dur, "args": args})
}

fn trace() -> Value {
    let mut events = vec![
        // CPU operators, each spanning the calls made under it
        x(
            "cpu_op",
            "aten::mm",
            PID,
            TID,
            985,
            150,
            json!({"External id": 10}),
        ),
        x(
            "cpu_op",
            "c10d::allreduce_",
            PID,
            TID,
            998,
            10,
            json!({"External id": 11}),
        ),
        x(
            "cpu_op",
            "aten::add",
            PID,
            TID,
            1099,
            300,
            json!({"External id": 12}),
        ),
        x(
            "cpu_op",
            "aten::copy_",
            PID,
            TID,
            1299,
            15,
            json!({"External id": 13}),
        ),
        // annotations: "step" holds every call; "fwd" the calls at 990, 1000, 1100 and 1120;
        // "inner" (inside one 1 ms bucket) only the call at 1120
        x("user_annotation", "step", PID, TID, 980, 620, json!({})),
        x("user_annotation", "fwd", PID, TID, 985, 140, json!({})),
        x("user_annotation", "inner", PID, TID, 1119, 3, json!({})),
    ];
    for l in launches() {
        events.push(x(
            "cuda_runtime",
            l.api.0,
            PID,
            TID,
            l.api_ts,
            l.api_dur,
            json!({"cbid": l.api.1, "correlation": l.corr, "External id": l.external_id}),
        ));
        let mut args = json!({"device": 0, "context": 1, "stream": l.stream,
            "correlation": l.corr, "External id": l.external_id});
        if l.op.0 == "kernel" {
            args["grid"] = json!([4, 1, 1]);
            args["block"] = json!([128, 1, 1]);
        } else {
            args["bytes"] = json!(2000);
        }
        events.push(x(l.op.0, l.op.1, 0, l.stream, l.ts, l.dur, args));
    }
    json!({"schemaVersion": 1, "traceEvents": events})
}

/// A catalog of the window or archive at `path` with the report helpers, and the SQL of
/// report `name` with `params`.
async fn session(path: &Path, name: &str, params: &[(&str, &str)]) -> (SessionContext, String) {
    let window = Window::open(path).unwrap();
    let ctx = tracesql::catalog::open(&window).await.unwrap();
    tracesql::report::register_helpers(&ctx, &window.partition_keys)
        .await
        .unwrap();
    let values: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sql = tracesql::report::find(name)
        .unwrap()
        .sql(&window.partition_keys, &values)
        .unwrap();
    (ctx, sql)
}

/// Run report `name` (parameters `params`) on the window or archive at `path`; rows as text.
async fn report(path: &Path, name: &str, params: &[(&str, &str)]) -> Vec<String> {
    let (ctx, sql) = session(path, name, params).await;
    rows(&ctx, &sql).await
}

fn known_window() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let window = import_trace(&trace(), tmp.path(), "w");
    (tmp, window)
}

/// The columns `columns` ("a, b") of a report's rows, in the report's order; floats rounded
/// to 4 decimals, trailing zeros dropped.
async fn pick(path: &Path, name: &str, columns: &str) -> Vec<String> {
    let (ctx, sql) = session(path, name, &[]).await;
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let names: Vec<&str> = columns.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    for batch in &batches {
        for row in 0..batch.num_rows() {
            let cells: Vec<String> = names
                .iter()
                .map(|n| {
                    cell(
                        batch.column_by_name(n).unwrap_or_else(|| panic!("{n}")),
                        row,
                    )
                })
                .collect();
            out.push(cells.join("|"));
        }
    }
    out
}

fn cell(array: &ArrayRef, row: usize) -> String {
    if array.is_null(row) {
        return "NULL".into();
    }
    if let Some(f) = array.as_any().downcast_ref::<Float64Array>() {
        let text = format!("{:.4}", f.value(row));
        return text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    let text = cast(array, &DataType::Utf8).unwrap();
    text.as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .value(row)
        .to_string()
}

#[tokio::test]
async fn temporal_breakdown_splits_the_span_into_idle_compute_and_the_rest() {
    let (_tmp, w) = known_window();
    // busy, merged: [1000,1100] [1150,1200] [1205,1310] [1400,1420] [1500,1510] = 285 µs of a
    // 510 µs span, so 225 idle; computation (gemm_*): 100 + 50 + 10 + 10 = 170; the rest 115
    // (the all-reduce's 95 µs outside gemm_b, the 20 µs copy)
    let got = pick(
        &w,
        "temporal_breakdown",
        "idle_ns, compute_ns, non_compute_ns, kernel_ns, idle_pct, compute_pct",
    )
    .await;
    assert_eq!(got, ["225000|170000|115000|510000|44.1176|33.3333"]);
}

#[tokio::test]
async fn kernel_breakdown_counts_overlaps_apart_and_comm_overlap_is_their_share() {
    let (_tmp, w) = known_window();
    // the all-reduce [1210,1310] overlaps gemm_b [1205,1215] for 5 µs
    let got = pick(&w, "kernel_breakdown", "kernel_type, total_ns").await;
    assert_eq!(
        got,
        [
            "COMPUTATION|165000",
            "COMMUNICATION|95000",
            "MEMORY|20000",
            "COMPUTATION overlapping COMMUNICATION|5000",
        ]
    );
    let got = pick(
        &w,
        "comm_overlap",
        "comm_ns, overlap_ns, comm_comp_overlap_pct",
    )
    .await;
    assert_eq!(got, ["100000|5000|5"]);
}

#[tokio::test]
async fn idle_breakdown_tells_host_wait_from_kernel_wait_and_other() {
    let (_tmp, w) = known_window();
    // stream 7 in start order: gemm_a@1000, gemm_a@1150 (launched at 1120, after the previous
    // end 1100: host wait 50), gemm_b@1205 (5 after 1200, launched before: kernel wait), the
    // copy@1400 (launched at 1300 > 1215: host wait 185), gemm_b@1500 (80 after 1420, launched
    // at 1350: other). Stream 13 has one op: no interval.
    let got = pick(
        &w,
        "idle_breakdown",
        "stream_id, idle_category, idle_ns, idle_ratio",
    )
    .await;
    assert_eq!(
        got,
        [
            "7|host_wait|235000|0.7344",
            "7|kernel_wait|5000|0.0156",
            "7|other|80000|0.25",
            "13|other|0|NULL",
        ]
    );
    // a 4 µs threshold turns the 5 µs gap into "other"
    let got = report(&w, "idle_breakdown", &[("kernel_wait_ns", "4000")]).await;
    assert!(
        got.iter().any(|r| r.ends_with("|7|other|85000|0.265625")),
        "{got:?}"
    );
}

#[tokio::test]
async fn launch_stats_measure_each_launch_and_flag_outliers() {
    let (_tmp, w) = known_window();
    let got = pick(&w, "launch_stats",
        "correlation_id, cpu_duration_ns, gpu_duration_ns, launch_delay_ns, short_kernel, runtime_outlier, delay_outlier").await;
    assert_eq!(
        got,
        [
            // delay = op start - call end
            "1|5000|100000|5000|false|false|false",
            "3|5000|100000|205000|false|false|true",
            "4|5000|10000|100000|false|false|false",
            "2|5000|50000|25000|false|false|false",
            "5|10000|20000|90000|false|false|false",
            // a 60 µs call over the 50 µs cut-off, longer than its 10 µs kernel
            "6|60000|10000|90000|true|true|false",
        ]
    );
}

#[tokio::test]
async fn summaries_count_and_rank_kernels_calls_and_copies() {
    let (_tmp, w) = known_window();
    let got = pick(
        &w,
        "kernel_summary",
        "name, instances, total_ns, time_pct, avg_ns, med_ns, min_ns, max_ns, stddev_ns",
    )
    .await;
    assert_eq!(
        got,
        [
            "gemm_a|2|150000|55.5556|75000|75000|50000|100000|35355.3391",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL|1|100000|37.037|100000|100000|100000|100000|0",
            "gemm_b|2|20000|7.4074|10000|10000|10000|10000|0",
        ]
    );
    let got = pick(&w, "kernel_shape_summary", "name, grid, block, instances").await;
    assert_eq!(got[0], "gemm_a|4x1x1|128x1x1|2");
    let got = pick(&w, "api_summary", "domain, name, calls, total_ns").await;
    assert_eq!(
        got,
        [
            "runtime|cudaLaunchKernel|5|80000",
            "runtime|cudaMemcpyAsync|1|10000"
        ]
    );
    let got = pick(
        &w,
        "memcpy_summary",
        "kind, count, total_ns, total_bytes, gb_per_s",
    )
    .await;
    assert_eq!(got, ["memcpy HtoD|1|20000|2000|0.1"]);
}

#[tokio::test]
async fn gpu_gaps_are_the_stretches_with_no_op_on_the_device() {
    let (_tmp, w) = known_window();
    // idle stretches: 1100-1150 (50 µs), 1310-1400 (90), 1420-1500 (80); 1200-1205 is 5
    let got = report(&w, "gpu_gaps", &[("min_gap_ns", "60000")]).await;
    let at = |us: i64| (T0 + us) * 1000;
    assert_eq!(
        got,
        [
            format!("0|{}|{}|90000", at(1310), at(1400)),
            format!("0|{}|{}|80000", at(1420), at(1500)),
        ]
    );
    assert_eq!(
        report(&w, "gpu_gaps", &[("min_gap_ns", "40000")])
            .await
            .len(),
        3
    );
}

#[tokio::test]
async fn queue_length_counts_launched_ops_not_yet_started() {
    let (_tmp, w) = known_window();
    // stream 7: +990 -1000 +1100 +1120 -1150 -1205 +1300 +1350 -1400 -1500
    let got = pick(&w, "queue_length", "stream_id, queue_length").await;
    let stream7: Vec<&str> = got
        .iter()
        .filter(|r| r.starts_with("7|"))
        .map(|r| &r[2..])
        .collect();
    assert_eq!(stream7, ["1", "0", "1", "2", "1", "0", "1", "2", "1", "0"]);
    // at 2 during [1120,1150] and [1350,1400]
    let got = pick(
        &w,
        "queue_length_summary",
        "stream_id, steps, max_length, time_at_max_ns",
    )
    .await;
    assert_eq!(got, ["7|10|2|80000", "13|2|1|210000"]);
}

#[tokio::test]
async fn top_ops_rank_cpu_operators_by_the_gpu_time_they_launched() {
    let (_tmp, w) = known_window();
    let got = pick(&w, "top_ops", "name, calls, gpu_ops, gpu_ns").await;
    assert_eq!(
        got,
        [
            "aten::mm|1|2|150000",
            "c10d::allreduce_|1|1|100000",
            "aten::add|1|2|20000",
            "aten::copy_|1|1|20000",
        ]
    );
}

#[tokio::test]
async fn annotation_gpu_time_projects_each_range_onto_the_gpu() {
    let (_tmp, w) = known_window();
    // step: all six ops, 1000..1510; fwd: calls at 990, 1000, 1100, 1120 -> gemm_a@1000,
    // all-reduce@1210, gemm_b@1205, gemm_a@1150 -> 1000..1310; inner: gemm_a@1150 -> 50 µs
    let got = pick(
        &w,
        "annotation_gpu_time",
        "name, instances, total_range_ns, total_proj_ns, gpu_ops, gpu_busy_ns",
    )
    .await;
    assert_eq!(
        got,
        [
            "step|1|620000|510000|6|290000",
            "fwd|1|140000|310000|4|260000",
            "inner|1|3000|50000|1|50000",
        ]
    );
}

#[tokio::test]
async fn gpu_utilization_bins_add_up_to_the_busy_time() {
    let (_tmp, w) = known_window();
    // 51 bins of 10 µs over 1000..1510; per stream the pieces add up to the stream's op time
    let got = report(&w, "gpu_utilization", &[("bins", "51")]).await;
    let mut busy = std::collections::BTreeMap::<String, i64>::new();
    for row in &got {
        let cells: Vec<&str> = row.split('|').collect();
        *busy.entry(cells[1].to_string()).or_default() += cells[5].parse::<i64>().unwrap();
        let pct: f64 = cells[6].parse().unwrap();
        assert!((0.0..=100.0).contains(&pct), "{row}");
    }
    assert_eq!(busy["7"], 190_000);
    assert_eq!(busy["13"], 100_000);
    // the 100 µs all-reduce lies in 10 bins: [1210,1220) ... [1300,1310)
    assert_eq!(got.iter().filter(|r| r.starts_with("0|13|")).count(), 10);
}

#[tokio::test]
async fn over_an_archive_every_report_leads_with_the_partition_columns() {
    let tmp = tempfile::tempdir().unwrap();
    for rank in [0, 1] {
        let dir = tmp.path().join(format!("src{rank}"));
        std::fs::create_dir_all(&dir).unwrap();
        let w = import_trace(&trace(), &dir, "w");
        std::fs::rename(&w, {
            let to = tmp
                .path()
                .join(format!("ranks/rank={rank}/window_id=000001"));
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            to
        })
        .unwrap();
    }
    let archive = tmp.path().join("ranks");
    let got = pick(&archive, "temporal_breakdown", "rank, window_id, idle_ns").await;
    assert_eq!(got, ["0|1|225000", "1|1|225000"]);
    let got = pick(&archive, "kernel_summary", "rank, name, instances").await;
    assert_eq!(
        &got[..2],
        ["0|gemm_a|2", "0|ncclDevKernel_AllReduce_Sum_f32_RING_LL|1"]
    );
    assert_eq!(got.len(), 6);
    for r in tracesql::report::reports() {
        let (ctx, sql) = session(&archive, r.name, &[]).await;
        let planned = tracesql::query::plan_script(&ctx, &sql).await.unwrap();
        let schema = planned.schema().clone();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(&names[..2], ["rank", "window_id"], "{}", r.name);
        let all = rows(&ctx, &sql).await;
        assert!(
            all.iter()
                .all(|row| row.starts_with("0|1|") || row.starts_with("1|1|")),
            "{}",
            r.name
        );
    }
}

#[tokio::test]
async fn every_report_plans_against_empty_canonical_tables() {
    for partitions in [vec![], vec!["host".to_string(), "window_id".to_string()]] {
        let window = Window::empty(Path::new("/nonexistent"), partitions.clone());
        let ctx = tracesql::catalog::open(&window).await.unwrap();
        tracesql::report::register_helpers(&ctx, &partitions)
            .await
            .unwrap();
        for r in tracesql::report::reports() {
            let sql = r.sql(&partitions, &[]).unwrap();
            let got = tracesql::query::plan_script(&ctx, &sql).await;
            assert!(got.is_ok(), "{} {partitions:?}: {:?}", r.name, got.err());
            got.unwrap().collect().await.unwrap();
        }
    }
}

#[test]
fn report_all_writes_one_html_page_with_every_report() {
    let (tmp, w) = known_window();
    let page = tmp.path().join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["report", "all", "--format", "html", "--window"])
        .arg(&w)
        .arg("--output")
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    for r in tracesql::report::reports() {
        assert!(html.contains(r.name), "{} missing", r.name);
    }
    assert!(html.contains("gemm_a") && html.matches("<svg").count() >= 4);
    // an HTML page is a file, and never one inside the window
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["report", "all", "--format", "html", "--window"])
        .arg(&w)
        .arg("--output")
        .arg(w.join("r.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!w.join("r.html").exists());
}

#[test]
fn several_reports_run_in_one_command_into_one_file_each() {
    let (tmp, w) = known_window();
    let dir = tmp.path().join("out");
    let names = ["kernel_summary", "temporal_breakdown", "launch_stats"];
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .arg("report")
        .args(names)
        .args(["--format", "csv", "--window"])
        .arg(&w)
        .arg("--output")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // each file is what the report alone writes
    for name in names {
        let alone = tmp.path().join(format!("{name}.csv"));
        let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
            .args(["report", name, "--window"])
            .arg(&w)
            .arg("--output")
            .arg(&alone)
            .output()
            .unwrap();
        assert!(out.status.success());
        let together = std::fs::read(dir.join(format!("{name}.csv"))).unwrap();
        assert_eq!(together, std::fs::read(&alone).unwrap(), "{name}");
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), names.len());
    // several reports to stdout in a row format would run together: refused
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args([
            "report",
            "kernel_summary",
            "api_summary",
            "--format",
            "csv",
            "--window",
        ])
        .arg(&w)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("one file each"));
}

/// gpu_utilization's bins span the first GPU op's start to the last one's end, on every run:
/// DataFusion's aggregate dynamic filter once dropped the last ops at random from its
/// `MIN(ts), MAX(ts + dur)` (engine::base_config), and the bins came out narrower.
#[tokio::test(flavor = "multi_thread")]
async fn gpu_utilization_bins_span_every_op_on_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("window_id=000001");
    let config = tracesql::synth::SynthConfig::new(20_000, 7);
    tracesql::synth::write_window(&config, &dir).unwrap();
    let (ctx, sql) = session(&dir, "gpu_utilization", &[]).await;
    // The span asked for alone, as one aggregate of one expression each.
    let first = rows(&ctx, "select min(ts) from gpu_op").await[0].clone();
    let last = rows(&ctx, "select max(ts + dur) from gpu_op").await[0].clone();
    let (first, last): (i64, i64) = (first.parse().unwrap(), last.parse().unwrap());
    let width = (last - first + 99) / 100; // ceil: the span is positive
    let bins = format!(
        "select distinct bin_end_ns - bin_start_ns as width, min(bin_start_ns) over () as t0 \
         from ({sql})"
    );
    for run in 0..8 {
        let seen = rows(&ctx, &bins).await;
        assert_eq!(
            seen,
            vec![format!("{width}|{first}")],
            "run {run}: the bins of gpu_utilization"
        );
    }
}
