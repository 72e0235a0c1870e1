//! `tracesql diff` on runs whose differences are known by construction: a Kineto trace of
//! eight profiler steps is simulated (CPU ops that launch a GEMM, an add and a copy; the GPU
//! runs each op when its call has been made and the previous op is done), once as BASE and
//! once with one change injected. Each change must land on its cause and its op, exactly;
//! a run diffed with itself flags nothing; and on a real pair (two DLRM ranks) every GPU op
//! of a step is counted once.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use tracesql::window::Window;

use crate::support::{import_trace, rows};

const STEPS: i64 = 8;
const PID: i64 = 77;
const TID: i64 = 78;
/// The trace's time origin, µs.
const T0: i64 = 1_700_000_000_000_000;

/// What NEW does differently from BASE.
#[derive(Clone, Copy, Default)]
pub(crate) struct Change {
    /// the GEMM kernel runs 20 % longer
    pub(crate) slow_gemm: bool,
    /// every step also runs aten::relu, which launches relu_kernel
    pub(crate) extra_relu: bool,
    /// the add's launch call takes this much longer, µs
    pub(crate) slow_add_call_us: i64,
    /// the host stalls this long before aten::add, µs
    pub(crate) stall_before_add_us: i64,
}

/// One CPU op of a step and the GPU op it launches.
struct Op {
    cpu: &'static str,
    call: (&'static str, i64),
    kind: &'static str,
    name: &'static str,
    dur_ns: i64,
}

pub(crate) const GEMM: &str = "void gemm_kernel<float, 128>(float const*, float*, int)";

/// The ops of step `step`. GPU durations vary a little from step to step (noise), the same
/// way in both runs. Every op's CPU time (30 µs) exceeds its GPU time: the GPU waits for the
/// host before each op.
fn ops(step: i64, change: Change) -> Vec<Op> {
    let launch = ("cudaLaunchKernel", 211);
    let gemm_ns = 20_000 + 1_000 * (step % 2);
    let mut ops = vec![
        Op {
            cpu: "aten::mm",
            call: launch,
            kind: "kernel",
            name: GEMM,
            dur_ns: if change.slow_gemm {
                gemm_ns * 6 / 5
            } else {
                gemm_ns
            },
        },
        Op {
            cpu: "aten::add",
            call: launch,
            kind: "kernel",
            name: "add_kernel",
            dur_ns: 10_000 + 1_000 * (step % 3),
        },
        Op {
            cpu: "aten::copy_",
            call: ("cudaMemcpyAsync", 41),
            kind: "gpu_memcpy",
            name: "Memcpy HtoD (Pageable -> Device)",
            dur_ns: 8_000,
        },
    ];
    if change.extra_relu {
        ops.push(Op {
            cpu: "aten::relu",
            call: launch,
            kind: "kernel",
            name: "relu_kernel",
            dur_ns: 7_000,
        });
    }
    ops
}

/// `ns` rounded up to whole µs.
fn whole_us(ns: i64) -> i64 {
    (ns as u64).div_ceil(1000) as i64 * 1000
}

fn us(ns: i64) -> f64 {
    ns as f64 / 1000.0
}

fn x(cat: &str, name: &str, tid: i64, ts_ns: i64, dur_ns: i64, args: Value) -> Value {
    assert_eq!(ts_ns % 1000, 0, "starts are whole µs");
    let pid = if cat == "kernel" || cat == "gpu_memcpy" {
        0
    } else {
        PID
    };
    json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
           "ts": T0 + ts_ns / 1000, "dur": us(dur_ns), "args": args})
}

/// The simulated trace of one run.
pub(crate) fn trace(change: Change) -> Value {
    let mut events = Vec::new();
    let (mut t, mut gpu_free, mut id, mut forward_start) = (0i64, 0i64, 0i64, 0i64);
    for step in 0..STEPS {
        let step_start = t;
        for op in ops(step, change) {
            if op.cpu == "aten::mm" {
                forward_start = t;
            }
            if op.cpu == "aten::add" {
                t += change.stall_before_add_us * 1000;
            }
            id += 1;
            let call_ts = t + 2_000;
            let call_dur = 5_000
                + if op.cpu == "aten::add" {
                    change.slow_add_call_us * 1000
                } else {
                    0
                };
            let start = whole_us((call_ts + 3_000).max(gpu_free));
            gpu_free = start + op.dur_ns;
            events.push(x(
                "cpu_op",
                op.cpu,
                TID,
                t,
                30_000,
                json!({"External id": id}),
            ));
            events.push(x(
                "cuda_runtime",
                op.call.0,
                TID,
                call_ts,
                call_dur,
                json!({"cbid": op.call.1, "correlation": id, "External id": id}),
            ));
            let mut args = json!({"device": 0, "context": 1, "stream": 7, "correlation": id,
                "External id": id});
            if op.kind == "kernel" {
                args["grid"] = json!([4, 1, 1]);
                args["block"] = json!([128, 1, 1]);
            } else {
                args["bytes"] = json!(4096);
            }
            events.push(x(op.kind, op.name, 7, start, op.dur_ns, args));
            // annotated ranges: "gemm_block" around the GEMM's op, inside "forward" around it
            // and the add's; the copy has none
            match op.cpu {
                "aten::mm" => events.push(x(
                    "user_annotation",
                    "gemm_block",
                    TID,
                    t,
                    30_000,
                    json!({}),
                )),
                "aten::add" => events.push(x(
                    "user_annotation",
                    "forward",
                    TID,
                    forward_start,
                    t + 30_000 - forward_start,
                    json!({}),
                )),
                _ => {}
            }
            t += 31_000;
        }
        let end = whole_us(t.max(gpu_free) + 2_000);
        let name = format!("ProfilerStep#{}", 100 + step);
        events.push(x(
            "user_annotation",
            &name,
            TID,
            step_start,
            end - step_start,
            json!({}),
        ));
        t = end + 5_000;
    }
    json!({"schemaVersion": 1, "traceEvents": events})
}

/// BASE and NEW (BASE with `change`) imported into a temporary folder.
pub(crate) fn pair(change: Change) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let base = import_trace(&trace(Change::default()), tmp.path(), "base");
    let new = import_trace(&trace(change), tmp.path(), "new");
    (tmp, base, new)
}

/// Rows of `sql` over the diff of `base` and `new`.
pub(crate) async fn diff_rows(base: &Path, new: &Path, sql: &str) -> Vec<String> {
    let options = tracesql::diff::Options::default();
    diff_rows_with(base, new, &options, sql).await.unwrap()
}

async fn diff_rows_with(
    base: &Path,
    new: &Path,
    options: &tracesql::diff::Options,
    sql: &str,
) -> tracesql::Result<Vec<String>> {
    let (base, new) = (Window::open(base).unwrap(), Window::open(new).unwrap());
    let diff = tracesql::diff::open(&base, &new, options).await?;
    Ok(rows(&diff.ctx, sql).await)
}

/// `column` of diff_by's row for `key` keyed `by`, as an integer.
async fn by_figure(base: &Path, new: &Path, by: &str, key: &str, column: &str) -> String {
    let sql = format!("SELECT {column} FROM diff_by WHERE by = '{by}' AND key = '{key}'");
    let got = diff_rows(base, new, &sql).await;
    assert_eq!(got.len(), 1, "{by} {key}: {got:?}");
    got[0].clone()
}

#[tokio::test]
async fn a_run_diffed_with_itself_changes_and_flags_nothing() {
    let (_tmp, base, _) = pair(Change::default());
    let summary = diff_rows(
        &base,
        &base,
        "SELECT steps, delta_ns, gpu_ns, added_ns, removed_ns, host_wait_ns, residual_ns, \
         p_value, flagged FROM diff_summary",
    )
    .await;
    assert_eq!(summary, vec![format!("{STEPS}|0|0|0|0|0|0|1.0|false")]);
    let changed = diff_rows(
        &base,
        &base,
        "SELECT by, key FROM diff_by WHERE delta_ns <> 0 OR flagged OR launch_ns <> 0 \
         OR host_wait_ns <> 0",
    )
    .await;
    assert_eq!(changed, Vec::<String>::new());
    let unpaired = diff_rows(
        &base,
        &base,
        "SELECT count(*) FILTER (WHERE change <> 'paired'), count(*) FROM diff_gpu_op",
    )
    .await;
    assert_eq!(unpaired, vec![format!("0|{}", 3 * STEPS)]);
}

#[tokio::test]
async fn a_slower_kernel_is_gpu_time_of_that_kernel() {
    let (_tmp, base, new) = pair(Change {
        slow_gemm: true,
        ..Change::default()
    });
    let added: i64 = (0..STEPS)
        .map(|s| ops(s, Change::default())[0].dur_ns / 5)
        .sum();
    let row = "delta_ns, gpu_ns, added_ns, removed_ns, flagged";
    assert_eq!(
        by_figure(&base, &new, "kernel", "gemm_kernel", row).await,
        format!("{added}|{added}|0|0|true")
    );
    for other in ["add_kernel", "Memcpy"] {
        assert_eq!(
            by_figure(&base, &new, "kernel", other, row).await,
            "0|0|0|0|false",
            "{other}"
        );
    }
    // by annotation: on the innermost range around the GEMM's launch
    assert_eq!(
        by_figure(&base, &new, "annotation", "gemm_block", row).await,
        format!("{added}|{added}|0|0|true")
    );
    for other in ["forward", "(no annotation)"] {
        assert_eq!(
            by_figure(&base, &new, "annotation", other, row).await,
            "0|0|0|0|false",
            "{other}"
        );
    }
    // per step: the GEMM's own 20 %
    let steps = diff_rows(
        &base,
        &new,
        "SELECT step, gpu_ns FROM diff_step ORDER BY step",
    )
    .await;
    let expected: Vec<String> = (0..STEPS)
        .map(|s| format!("{}|{}", s + 1, ops(s, Change::default())[0].dur_ns / 5))
        .collect();
    assert_eq!(steps, expected);
}

#[tokio::test]
async fn an_added_kernel_is_added_work_of_its_op() {
    let (_tmp, base, new) = pair(Change {
        extra_relu: true,
        ..Change::default()
    });
    assert_eq!(
        by_figure(
            &base,
            &new,
            "op",
            "aten::relu",
            "base_count, new_count, added_ns, gpu_ns, flagged"
        )
        .await,
        format!("0|{STEPS}|{}|0|true", STEPS * 7_000)
    );
    let elsewhere = diff_rows(
        &base,
        &new,
        "SELECT key FROM diff_by WHERE by = 'op' AND added_ns <> 0",
    )
    .await;
    assert_eq!(elsewhere, vec!["aten::relu"]);
    let summary = diff_rows(&base, &new, "SELECT added_ns, removed_ns FROM diff_summary").await;
    assert_eq!(summary, vec![format!("{}|0", STEPS * 7_000)]);
}

#[tokio::test]
async fn a_slower_launch_call_is_launch_time_of_its_op() {
    let (_tmp, base, new) = pair(Change {
        slow_add_call_us: 12,
        ..Change::default()
    });
    let got = diff_rows(
        &base,
        &new,
        "SELECT key, launch_ns FROM diff_by WHERE by = 'op' AND launch_ns <> 0",
    )
    .await;
    assert_eq!(got, vec![format!("aten::add|{}", STEPS * 12_000)]);
}

#[tokio::test]
async fn a_host_stall_is_gpu_idle_waiting_for_the_host_before_that_op() {
    let (_tmp, base, new) = pair(Change {
        stall_before_add_us: 40,
        ..Change::default()
    });
    let got = diff_rows(
        &base,
        &new,
        "SELECT key, host_wait_ns FROM diff_by WHERE by = 'op' AND host_wait_ns <> 0",
    )
    .await;
    assert_eq!(got, vec![format!("aten::add|{}", STEPS * 40_000)]);
    // the step time grew by the stall, all of it host wait, and beyond the noise
    let summary = diff_rows(
        &base,
        &new,
        "SELECT delta_ns, host_wait_ns, gpu_ns, residual_ns, flagged FROM diff_summary",
    )
    .await;
    let stalled = STEPS * 40_000;
    assert_eq!(summary, vec![format!("{stalled}|{stalled}|0|0|true")]);
}

#[tokio::test]
async fn every_gpu_op_of_a_real_pairs_steps_is_counted_once() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kineto");
    let tmp = tempfile::tempdir().unwrap();
    let read = |name: &str| -> Value {
        let file = std::fs::File::open(dir.join(name)).unwrap();
        serde_json::from_reader(flate2::read::GzDecoder::new(file)).unwrap()
    };
    let base = import_trace(
        &read("param_dlrm_worker0_step_12.1694128201545.pt.trace.json.gz"),
        tmp.path(),
        "rank0",
    );
    let new = import_trace(
        &read("param_dlrm_worker1_step_12.1694128201556.pt.trace.json.gz"),
        tmp.path(),
        "rank1",
    );
    // each run's GPU ops launched inside its step, counted on the window alone (these windows
    // link ops to calls, so an op whose call is not in the trace is in no step, as in HTA)
    let mut expected = Vec::new();
    for window in [&base, &new] {
        let ctx = crate::support::open(window).await;
        let got = rows(
            &ctx,
            "SELECT count(*), sum(g.dur) FROM gpu_op g \
             JOIN api_call a ON a.correlation_id = g.correlation_id AND g.correlation_id <> 0 \
             JOIN cpu_event s ON s.ph = 'X' AND s.name LIKE 'ProfilerStep#%' \
               AND s.cat <> 'gpu_user_annotation' \
               AND a.ts >= s.ts_ns AND a.ts < s.ts_ns + s.dur_ns \
             WHERE g.kind IN ('kernel', 'gpu_memcpy', 'gpu_memset')",
        )
        .await;
        expected.push(got[0].clone());
    }
    for by in ["kernel", "op", "stream"] {
        let got = diff_rows(
            &base,
            &new,
            &format!(
                "SELECT sum(base_count), sum(base_ns), sum(new_count), sum(new_ns) \
                 FROM diff_by WHERE by = '{by}'"
            ),
        )
        .await;
        assert_eq!(
            got,
            vec![format!("{}|{}", expected[0], expected[1])],
            "by {by}"
        );
    }
}

#[test]
fn the_cli_writes_the_diff_and_refuses_what_it_cannot_pair() {
    let (tmp, base, new) = pair(Change {
        slow_gemm: true,
        ..Change::default()
    });
    let tracesql = || Command::new(env!("CARGO_BIN_EXE_tracesql"));
    let out_file = tmp.path().join("kernels.csv");
    let out = tracesql()
        .arg("diff")
        .args([&base, &new])
        .args(["--by", "kernel", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(&out_file).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("key,base_count,new_count,base_ns,new_ns,delta_ns"));
    assert!(
        lines.next().unwrap().starts_with("gemm_kernel,"),
        "most changed first:\n{csv}"
    );

    // a run against an archive of ranks: nothing to pair, one line, exit 1 (the user's error)
    let archive = tmp.path().join("ranks");
    crate::support::copy_dir(&base, &archive.join("rank=0").join("window_id=000001"));
    let out = tracesql()
        .arg("diff")
        .args([&base, &archive])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("partitioned by"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // a bad --steps names the option
    let out = tracesql()
        .arg("diff")
        .args([&base, &new])
        .args(["--steps", "3-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--steps"));
}

#[test]
fn the_html_page_draws_the_change_by_cause_the_steps_and_the_top_changes() {
    let (tmp, base, new) = pair(Change {
        slow_gemm: true,
        ..Change::default()
    });
    let tracesql = || Command::new(env!("CARGO_BIN_EXE_tracesql"));
    let page_file = tmp.path().join("diff.html");
    let out = tracesql()
        .arg("diff")
        .args([&base, &new])
        .arg("-o")
        .arg(&page_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_file).unwrap();
    // six causes and the whole change; both runs' 8 steps
    assert_eq!(crate::support::plot_marks(&page, "diff_summary"), Some(7));
    assert_eq!(crate::support::plot_marks(&page, "diff_step"), Some(16));
    // the slowed GEMM is the one regressed kernel, flagged (solid); the others did not change
    let kernels = &page[page.find("data-plot=\"diff_by_kernel\"").unwrap()..];
    let kernels = &kernels[..kernels.find("</svg>").unwrap()];
    assert_eq!(
        kernels.matches("class=\"mark worse\"").count(),
        1,
        "{kernels}"
    );
    assert!(kernels.contains(">gemm_kernel</text>"));
    assert_eq!(crate::support::plot_marks(&page, "diff_by_kernel"), Some(1));
    assert!(!page.contains("<script"));

    // a page is a file, and never written into an input
    let out = tracesql()
        .arg("diff")
        .args([&base, &new])
        .args(["--format", "html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--output"));
    let inside = base.join("diff.html");
    let out = tracesql()
        .arg("diff")
        .args([&base, &new])
        .arg("-o")
        .arg(&inside)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!inside.exists());
}

#[tokio::test]
async fn pair_names_the_partition_columns_that_pair_ranks() {
    let (tmp, base, new) = pair(Change {
        slow_gemm: true,
        ..Change::default()
    });
    let archive = |name: &str, folder: &str, window: &Path| {
        let root = tmp.path().join(name);
        crate::support::copy_dir(window, &root.join(folder).join("window_id=000001"));
        root
    };
    let on_host_a = archive("a", "host=a/rank=0", &base);
    let on_host_b = archive("b", "host=b/rank=0", &new);
    let by_gpu = archive("c", "gpu=0", &new);
    let slower: i64 = (0..STEPS)
        .map(|s| ops(s, Change::default())[0].dur_ns / 5)
        .sum();
    let sql = "SELECT rank, delta_ns FROM diff_by WHERE by = 'kernel' AND key = 'gemm_kernel'";
    let with = |pair: &[(&str, &str)]| tracesql::diff::Options {
        pair: pair
            .iter()
            .map(|(b, n)| (b.to_string(), n.to_string()))
            .collect(),
        ..Default::default()
    };
    // by default the host pairs too, and the hosts differ: nothing pairs
    let none = diff_rows(&on_host_a, &on_host_b, sql).await;
    assert!(none.is_empty(), "{none:?}");
    // --pair rank: rank 0 with rank 0, whatever the host
    let got = diff_rows_with(&on_host_a, &on_host_b, &with(&[("rank", "rank")]), sql).await;
    assert_eq!(got.unwrap(), vec![format!("0|{slower}")]);
    // --pair rank=gpu: NEW names the column otherwise; the diff speaks BASE's names
    let got = diff_rows_with(&on_host_a, &by_gpu, &with(&[("rank", "gpu")]), sql).await;
    assert_eq!(got.unwrap(), vec![format!("0|{slower}")]);
    // a column a run does not have is named in the error
    let err = diff_rows_with(&on_host_a, &by_gpu, &with(&[("rank", "rank")]), sql)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("NEW") && err.contains("\"rank\"") && err.contains("[gpu, window_id]"),
        "{err}"
    );
}
