//! `tracesql import kineto`: real PyTorch profiler traces (tests/fixtures/kineto, and every
//! trace of ../shared/data/kineto when present) go through a window and `tracesql export`
//! and come back with the same GPU ops and API calls; bad inputs fail on one line and leave
//! nothing behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::value::RawValue;
use tracesql::catalog::cpu_trace::micros_text_to_ns;

use crate::support::{open, rows};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto")
        .join(name)
}

const BEFORE_FIX: &str = "pytorch_kineto__before_fix_trace.json";
const ALEXNET: &str =
    "facebookresearch_HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz";
const ROCM: &str =
    "facebookresearch_HolisticTraceAnalysis__mi250_minitoy_train_ROCm6_2_kineto.json.gz";
const B200: &str = "AMD-AGI_TraceLens__eager_trace_no_python.json.gz";
const DLRM0: &str = "param_dlrm_worker0_step_12.1694128201545.pt.trace.json.gz";
const DLRM1: &str = "param_dlrm_worker1_step_12.1694128201556.pt.trace.json.gz";

fn tracesql(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

fn import(traces: &[PathBuf], output: &Path) -> Output {
    let mut args: Vec<&Path> = vec![Path::new("import"), Path::new("kineto")];
    args.extend(traces.iter().map(|p| p.as_path()));
    args.extend([Path::new("--output"), output]);
    tracesql(&args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[derive(serde::Deserialize)]
struct Doc {
    #[serde(rename = "baseTimeNanoseconds", default)]
    base: Option<i64>,
    #[serde(rename = "traceEvents")]
    events: Vec<Event>,
}

#[derive(serde::Deserialize)]
struct Event {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    pid: Option<serde_json::Value>,
    #[serde(default)]
    tid: Option<serde_json::Value>,
    #[serde(default)]
    ts: Option<Box<RawValue>>,
    #[serde(default)]
    dur: Option<Box<RawValue>>,
    #[serde(default)]
    args: Option<serde_json::Value>,
}

fn load(path: &Path) -> Doc {
    let text = tracesql::file::read_gunzipped(path).unwrap();
    serde_json::from_slice(&text).unwrap()
}

/// What must survive the round trip of one GPU op: kind, name (kernels only: the exporter
/// names copies and sets itself), pid and tid drawn, device and stream args, start (unix ns)
/// and duration (ns).
type OpKey = (String, String, [String; 4], i64, i64);

/// The GPU ops, API-call counts and GPU user-annotation spans of a trace.
struct Summary {
    ops: Vec<OpKey>,
    api_calls: BTreeMap<String, usize>,
    regions: Vec<OpKey>,
}

fn summarize(doc: &Doc) -> Summary {
    let base = doc.base.unwrap_or(0);
    let mut ops = Vec::new();
    let mut regions = Vec::new();
    let mut api_calls = BTreeMap::new();
    for e in doc.events.iter().filter(|e| e.ph.as_deref() == Some("X")) {
        let cat = e.cat.clone().unwrap_or_default();
        let ns = |raw: &Option<Box<RawValue>>| micros_text_to_ns(raw.as_ref().unwrap().get());
        let text = |v: Option<&serde_json::Value>| v.map_or("-".into(), |v| v.to_string());
        let arg = |k: &str| text(e.args.as_ref().and_then(|a| a.get(k)));
        let key = |name: String| {
            (
                cat.clone(),
                name,
                [
                    text(e.pid.as_ref()),
                    text(e.tid.as_ref()),
                    arg("device"),
                    arg("stream"),
                ],
                base + ns(&e.ts).unwrap(),
                ns(&e.dur).unwrap(),
            )
        };
        match cat.as_str() {
            "kernel" => ops.push(key(e.name.clone().unwrap())),
            "gpu_memcpy" | "gpu_memset" => ops.push(key(String::new())),
            "gpu_user_annotation" => regions.push(key(e.name.clone().unwrap())),
            "cuda_runtime" | "cuda_driver" => *api_calls.entry(cat.clone()).or_default() += 1,
            _ => {}
        }
    }
    ops.sort();
    regions.sort();
    Summary {
        ops,
        api_calls,
        regions,
    }
}

/// How far the exporter's float µs may be from the exact time: nothing while f64 resolves
/// the nanosecond (times relative to a base), else two ulps (epoch µs need 19 digits).
fn tolerance_ns(ns: i64) -> i64 {
    let us = ns as f64 / 1000.0;
    let ulp_us = f64::from_bits(us.abs().to_bits() + 1) - us.abs();
    if ulp_us < 0.001 {
        0
    } else {
        (2.0 * ulp_us * 1000.0).ceil() as i64
    }
}

/// Import `trace`; check its window holds every GPU op to the ns; export the window with
/// `tracesql export` and check the export shows the same ops and API calls.
async fn round_trip(trace: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("w");
    let out = import(&[trace.to_path_buf()], &window);
    assert!(out.status.success(), "{}", stderr(&out));
    let progress = stderr(&out);
    assert!(progress.contains(" kernels, "), "{progress}");
    let original = load(trace);
    let before = summarize(&original);

    // the window: kind, kernel name, start and duration exactly as the trace's decimal text
    let ctx = open(&window).await;
    let mut in_window = rows(
        &ctx,
        "SELECT 'kernel', name, start_ns, end_ns - start_ns FROM kernel \
         UNION ALL SELECT 'gpu_memcpy', '', start_ns, end_ns - start_ns FROM gpu_memcpy \
         UNION ALL SELECT 'gpu_memset', '', start_ns, end_ns - start_ns FROM gpu_memset",
    )
    .await;
    in_window.sort();
    let mut expected: Vec<String> = before
        .ops
        .iter()
        .map(|(cat, name, _, ts, dur)| format!("{cat}|{name}|{ts}|{dur}"))
        .collect();
    expected.sort();
    assert_eq!(in_window, expected, "window of {trace:?}");

    let exported = tmp.path().join("out.json");
    let out = tracesql(&[
        Path::new("export"),
        Path::new("--window"),
        &window,
        Path::new("--output"),
        &exported,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = summarize(&load(&exported));
    let count = |s: &Summary, cat: &str| s.ops.iter().filter(|o| o.0 == cat).count();
    for cat in ["kernel", "gpu_memcpy", "gpu_memset"] {
        assert_eq!(
            count(&before, cat),
            count(&after, cat),
            "{cat} in {trace:?}"
        );
    }
    assert_eq!(before.api_calls, after.api_calls, "API calls in {trace:?}");
    // every kernel keeps its name, every op its device, stream, start and duration
    for (what, b, a) in [
        ("GPU ops", &before.ops, &after.ops),
        ("GPU user annotations", &before.regions, &after.regions),
    ] {
        assert_eq!(b.len(), a.len(), "{what} of {trace:?}");
        for (b, a) in b.iter().zip(a) {
            assert_eq!(
                (&b.0, &b.1, &b.2, b.4),
                (&a.0, &a.1, &a.2, a.4),
                "{what} of {trace:?}"
            );
            assert!(
                (b.3 - a.3).abs() <= tolerance_ns(b.3),
                "{what} of {trace:?}: start {} exported as {}",
                b.3,
                a.3
            );
        }
    }
}

#[tokio::test]
async fn a_newest_schema_h100_trace_round_trips() {
    round_trip(&fixture(BEFORE_FIX)).await;
}

#[tokio::test]
async fn an_epoch_microsecond_a100_trace_round_trips() {
    round_trip(&fixture(ALEXNET)).await;
}

#[tokio::test]
async fn a_rocm_trace_round_trips_keeping_hip_calls_in_the_cpu_trace() {
    round_trip(&fixture(ROCM)).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = import(&[fixture(ROCM)], &tmp.path().join("w"));
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("21 cuda_runtime events without cbid"),
        "{err}"
    );
}

#[tokio::test]
async fn a_b200_trace_with_driver_calls_nccl_and_annotations_round_trips() {
    round_trip(&fixture(B200)).await;
}

#[tokio::test]
async fn a_dlrm_rank_trace_round_trips() {
    round_trip(&fixture(DLRM0)).await;
}

#[tokio::test]
async fn every_shared_trace_round_trips() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/kineto");
    if !dir.is_dir() {
        eprintln!("skipped: {} is absent", dir.display());
        return;
    }
    let mut traces = Vec::new();
    let mut pending = vec![dir];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().contains(".json") {
                traces.push(path);
            }
        }
    }
    traces.sort();
    assert!(!traces.is_empty());
    for trace in traces {
        round_trip(&trace).await;
    }
}

#[tokio::test]
async fn window_times_are_exact_and_imported_names_stay_queryable() {
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("w");
    assert!(import(&[fixture(ALEXNET)], &window).status.success());
    let ctx = open(&window).await;
    // the first memcpy of the trace: ts 1695835572943613 µs, dur 12 µs
    assert_eq!(
        rows(
            &ctx,
            "SELECT start_ns, end_ns, name, copy_kind, src_kind, dst_kind, bytes FROM gpu_memcpy \
             ORDER BY start_ns LIMIT 1"
        )
        .await,
        ["1695835572943613000|1695835572943625000|Memcpy HtoD (Pageable -> Device)|1|1|3|92928"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT sync_type, count(*) FROM cuda_sync GROUP BY 1 ORDER BY 1"
        )
        .await,
        ["2|20", "3|16", "4|5"]
    );
    // CPU events stay in the CPU trace and join the API calls through external ids
    assert_eq!(
        rows(
            &ctx,
            "SELECT count(*) > 0 FROM cpu_launch WHERE cpu_name LIKE 'aten::%'"
        )
        .await,
        ["true"]
    );
}

#[tokio::test]
async fn several_traces_make_an_archive_partitioned_by_rank() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("a");
    // DLRM ranks 0 and 1 carry distributedInfo.rank; the H100 trace has none: position 2
    let out = import(
        &[fixture(DLRM1), fixture(DLRM0), fixture(BEFORE_FIX)],
        &archive,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out).lines().filter(|l| l.contains(" -> ")).count(),
        3
    );
    for rank in 0..3 {
        assert!(archive
            .join(format!("rank={rank}/window_id=000001/kernel.parquet"))
            .is_file());
    }
    let ctx = open(&archive).await;
    assert_eq!(
        rows(
            &ctx,
            "SELECT rank, window_id, count(*) FROM kernel GROUP BY rank, window_id ORDER BY rank"
        )
        .await,
        ["0|1|245", "1|1|310", "2|1|1"]
    );
}

#[test]
fn window_ids_and_progress_follow_input_order_while_traces_import_in_parallel() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("a");
    // rank 1 twice: its windows are numbered in the order the traces were given, whichever
    // worker finishes first, and each trace's line comes in that order too
    let out = import(&[fixture(DLRM1), fixture(DLRM0), fixture(DLRM1)], &archive);
    assert!(out.status.success(), "{}", stderr(&out));
    let windows: Vec<String> = stderr(&out)
        .lines()
        .filter_map(|l| l.split(" -> ").nth(1))
        .map(|rest| rest.split(':').next().unwrap().to_string())
        .collect();
    let expected: Vec<String> = [
        "rank=1/window_id=000001",
        "rank=0/window_id=000001",
        "rank=1/window_id=000002",
    ]
    .iter()
    .map(|rel| archive.join(rel).display().to_string())
    .collect();
    assert_eq!(windows, expected);
    for rel in &expected {
        assert!(Path::new(rel).join("kernel.parquet").is_file(), "{rel}");
    }
}

/// A hand-written trace with the quirks of older and odder producers.
const QUIRKS: &str = r#"{
  "schemaVersion": 1,
  "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": "1234", "tid": 7, "ts": 1700000000000001.2345, "dur": 10, "args": {"external id": 5}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 7, "ts": 1700000000000002.5, "dur": 3, "args": {"cbid": 211, "correlation": 42, "external id": 5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "INVALID", "pid": 1234, "tid": 7, "ts": 1700000000000003, "dur": 1, "args": {"cbid": 409, "correlation": 43}},
  {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1700000000000009.0001, "dur": 2.5, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 42, "grid": [4, 2, 1], "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024, "external id": 5, "blocks per SM": 0.5}},
  {"ph": "f", "id": 42, "pid": 0, "tid": 7, "ts": 1700000000000009.0001, "cat": "async", "name": "async_gpu", "bp": "e"},
  {"ph": "f", "id": 999, "pid": 0, "tid": 7, "ts": 1700000000000009, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1234, "tid": 7, "ts": 1700000000000004, "dur": 1, "args": {"cid": 7, "correlation": 44}},
  {"ph": "X", "cat": "kernel", "name": "no time"},
  17
  ]
}"#;

#[tokio::test]
async fn quirks_of_older_traces_map_and_what_does_not_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = tmp.path().join("quirks.json");
    std::fs::write(&trace, QUIRKS).unwrap();
    let window = tmp.path().join("w");
    let out = import(std::slice::from_ref(&trace), &window);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "kept in the CPU trace only (not in the window's tables): \
             1 cuda_runtime events without cbid, 1 kernel events without ts or dur; \
             dropped 1 traceEvents entries that are not objects of distinct keys"
        ),
        "{err}"
    );
    let ctx = open(&window).await;
    // ns digits of epoch-µs timestamps survive (no f64 on the way)
    assert_eq!(
        rows(
            &ctx,
            "SELECT start_ns, end_ns, name, grid_x, grid_y, static_shared_memory, metadata \
             FROM kernel"
        )
        .await,
        ["1700000000000009000|1700000000000011500|gemm|4|2|1024|{\"blocks per SM\":0.5}"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT r.name, a.name FROM cuda_runtime r JOIN api_call a \
             ON a.correlation_id = r.correlation_id ORDER BY r.correlation_id"
        )
        .await,
        [
            "cudaLaunchKernel|cudaLaunchKernel",
            "INVALID|cudaStreamGetCaptureInfo_v2"
        ]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT external_id, correlation_id FROM external_correlation"
        )
        .await,
        ["5|42"]
    );
    // the CPU trace keeps the operator, the HIP call, the partnerless flow, the untimed kernel;
    // the launch flow the exporter redraws is gone, and the missing base time is now explicit
    assert_eq!(
        rows(
            &ctx,
            "SELECT cat, name, pid, ts_ns FROM cpu_event ORDER BY event_index"
        )
        .await,
        [
            "Operator|aten::mm|1234|1700000000000001235",
            "ac2g|ac2g|0|1700000000000009000",
            "cuda_runtime|hipLaunchKernel|1234|1700000000000004000",
            "kernel|no time|NULL|NULL",
        ]
    );
    let cpu = load(&window.join("cpu_trace.json.gz"));
    assert_eq!(cpu.base, Some(0));
}

/// The failing import: exit 1, one line naming `needle`, nothing at `output` or beside it.
fn fails_cleanly(traces: &[PathBuf], output: &Path, needle: &str) -> String {
    let out = import(traces, output);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error: ")).count(),
        1,
        "{err}"
    );
    assert!(err.contains(needle), "{err}");
    assert!(!output.exists(), "{output:?} left behind");
    let mut tmp = output.as_os_str().to_owned();
    tmp.push(".tmp");
    assert!(!Path::new(&tmp).exists(), "{tmp:?} left behind");
    err
}

#[test]
fn truncated_json_fails_naming_the_file_and_where_it_ends() {
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read(fixture(BEFORE_FIX)).unwrap();
    let cut = tmp.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let err = fails_cleanly(&[cut], &tmp.path().join("w"), "cut.json: truncated JSON");
    assert!(err.contains(&format!("byte {}", text.len() / 2)), "{err}");
}

#[test]
fn a_truncated_gzip_fails_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = std::fs::read(fixture(ALEXNET)).unwrap();
    let cut = tmp.path().join("cut.json.gz");
    std::fs::write(&cut, &gz[..gz.len() - 100]).unwrap();
    fails_cleanly(&[cut], &tmp.path().join("w"), "cut.json.gz: cannot gunzip");
}

#[test]
fn invalid_json_fails_naming_the_file_and_the_byte_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"traceEvents\": [\n{\"ph\": X}]}").unwrap();
    fails_cleanly(
        &[bad],
        &tmp.path().join("w"),
        "bad.json: invalid JSON at byte 25",
    );
}

#[test]
fn json_without_trace_events_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("other.json");
    std::fs::write(&bad, r#"{"schemaVersion": 1, "events": []}"#).unwrap();
    fails_cleanly(&[bad], &tmp.path().join("w"), "other.json: no traceEvents");
}

#[test]
fn an_unreadable_file_fails_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.json");
    fails_cleanly(&[missing], &tmp.path().join("w"), "missing.json: ");
    // a directory given as a trace cannot be read either
    fails_cleanly(
        &[tmp.path().to_path_buf()],
        &tmp.path().join("w"),
        &tmp.path().display().to_string(),
    );
}

#[test]
fn a_bad_trace_in_an_archive_leaves_no_window_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "[]").unwrap();
    fails_cleanly(
        &[fixture(DLRM0), bad],
        &tmp.path().join("a"),
        "bad.json: invalid JSON",
    );
}

#[test]
fn an_existing_output_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let out = import(&[fixture(BEFORE_FIX)], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
}

#[test]
fn an_output_with_a_trailing_slash_is_the_same_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = format!("{}/w/", tmp.path().display());
    let out = import(&[fixture(BEFORE_FIX)], Path::new(&dir));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(tmp.path().join("w/kernel.parquet").is_file());
    assert!(tmp.path().join("w/cpu_trace.json.gz").is_file());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}
