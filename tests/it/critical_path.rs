//! `report critical_path` and `critical_path_summary` on small Kineto traces whose critical
//! path is known by construction: a serial chain, a kernel hidden under another stream's work,
//! a host stall, a wait on another stream's event, a sync without its record, a CUDA-graph
//! replay, a backward thread after its forward thread, and a what-if. Times below are µs from
//! the trace start.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::{import_trace, succeeded};

pub(crate) const PID: i64 = 500;
const T0: i64 = 1_700_000_000_000_000;

/// A trace built event by event: one CPU thread, one GPU (device 0, context 1).
#[derive(Default)]
struct Trace {
    events: Vec<Value>,
}

impl Trace {
    /// An X event on thread `(pid, tid)` over `(ts, dur)`.
    fn x(&mut self, cat: &str, name: &str, thread: (i64, i64), span: (i64, i64), args: Value) {
        let ((pid, tid), (ts, dur)) = (thread, span);
        self.events.push(
            json!({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
            "ts": T0 + ts, "dur": dur, "args": args}),
        );
    }
    fn step(&mut self, ts: i64, dur: i64) {
        self.x(
            "user_annotation",
            "ProfilerStep#1",
            (PID, PID),
            (ts, dur),
            json!({}),
        );
    }
    fn op(&mut self, name: &str, ts: i64, dur: i64) {
        self.x("cpu_op", name, (PID, PID), (ts, dur), json!({}));
    }
    fn call(&mut self, name: &str, cbid: i64, ts: i64, dur: i64, correlation: i64) {
        let args = json!({"cbid": cbid, "correlation": correlation});
        self.x("cuda_runtime", name, (PID, PID), (ts, dur), args);
    }
    fn kernel(&mut self, name: &str, stream: i64, ts: i64, dur: i64, correlation: i64) {
        let args = json!({"device": 0, "context": 1, "stream": stream,
            "correlation": correlation, "grid": [1, 1, 1], "block": [32, 1, 1]});
        self.x("kernel", name, (0, stream), (ts, dur), args);
    }
    /// An op that launches `kernel` on `stream`: the op, its cudaLaunchKernel 10 µs in, and the
    /// kernel at `starts`.
    fn launch(&mut self, op: (&str, i64, i64), kernel: (&str, i64, i64, i64), correlation: i64) {
        let (name, ts, dur) = op;
        self.op(name, ts, dur);
        self.call("cudaLaunchKernel", 211, ts + 10, 10, correlation);
        let (kernel, stream, starts, runs) = kernel;
        self.kernel(kernel, stream, starts, runs, correlation);
    }
    /// A synchronizing call (inside an op `aten::sync`) from `ts + 5` to `end`.
    fn sync_call(&mut self, (name, cbid): (&str, i64), ts: i64, end: i64, correlation: i64) {
        self.op("aten::sync", ts, end + 10 - ts);
        self.call(name, cbid, ts + 5, end - ts - 5, correlation);
    }
    /// cudaDeviceSynchronize (inside an op `aten::sync`) from `ts + 5` to `end`, with its
    /// cuda_sync record.
    fn device_sync(&mut self, ts: i64, end: i64, correlation: i64) {
        self.sync_call(("cudaDeviceSynchronize", 165), ts, end, correlation);
        let args = json!({"cuda_sync_kind": "Context Sync", "stream": -1,
            "correlation": correlation, "device": 0, "context": 1});
        self.x("cuda_sync", "Context Sync", (0, -1), (end - 2, 2), args);
    }
    fn window(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let trace = json!({"schemaVersion": 1, "traceEvents": self.events});
        import_trace(&trace, dir, "window")
    }
}

/// One segment of the path: type, bound_by, name, dur (µs).
#[derive(Debug, PartialEq)]
struct Segment {
    kind: String,
    bound_by: String,
    name: String,
    dur_us: i64,
}

pub(crate) fn report(window: &std::path::Path, name: &str) -> Vec<Vec<String>> {
    report_with(window, name, &[])
}

/// The report's rows with `--param` values.
fn report_with(window: &std::path::Path, name: &str, params: &[&str]) -> Vec<Vec<String>> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracesql"));
    command
        .args(["report", name, "--format", "csv", "-w"])
        .arg(window);
    for param in params {
        command.args(["--param", param]);
    }
    let out = succeeded(&mut command);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{line}");
            cells.iter().map(|c| c.to_string()).collect()
        })
        .collect()
}

fn path(window: &std::path::Path) -> Vec<Segment> {
    // step, step_name, position, type, bound_by, name, pid, tid, device, stream, ts, end, dur
    report(window, "critical_path")
        .into_iter()
        .map(|r| Segment {
            kind: r[3].clone(),
            bound_by: r[4].clone(),
            name: r[5].clone(),
            dur_us: r[12].parse::<i64>().unwrap() / 1000,
        })
        .collect()
}

/// (bound_by, µs) of the summary, and the path's length in µs.
fn summary(window: &std::path::Path) -> (Vec<(String, i64)>, i64) {
    // step, step_name, step_ns, bound_by, dur_ns, share_pct, segments, path_ns,
    // measured_path_ns, whatif_step_ns
    let rows = report(window, "critical_path_summary");
    let shares: f64 = rows.iter().map(|r| r[5].parse::<f64>().unwrap()).sum();
    assert!((shares - 100.0).abs() < 1e-9, "shares add up to {shares}");
    let causes = rows
        .iter()
        .map(|r| (r[3].clone(), r[4].parse::<i64>().unwrap() / 1000))
        .collect();
    (causes, rows[0][7].parse::<i64>().unwrap() / 1000)
}

fn timed(segments: &[Segment]) -> Vec<(&str, &str, i64)> {
    segments
        .iter()
        .filter(|s| s.dur_us != 0)
        .map(|s| (s.kind.as_str(), s.name.as_str(), s.dur_us))
        .collect()
}

/// aten::mul launches at 20 µs, the kernel runs 40..240 on stream 7, the device sync ends at
/// 250.
pub(crate) fn serial_chain(dir: &std::path::Path) -> std::path::PathBuf {
    let mut t = Trace::default();
    t.step(0, 1000);
    t.launch(("aten::mul", 10, 30), ("mul_kernel", 7, 40, 200), 1);
    t.device_sync(60, 250, 2);
    t.window(dir)
}

#[test]
fn a_serial_chain_runs_through_the_launch_the_kernel_and_the_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let window = serial_chain(tmp.path());
    assert_eq!(
        timed(&path(&window)),
        vec![
            ("operator", "aten::mul", 10),
            ("launch", "mul_kernel", 20),
            ("operator", "mul_kernel", 200),
            ("operator", "aten::sync", 10),
        ]
    );
    let (causes, length) = summary(&window);
    assert_eq!(length, 240);
    let want = [("cpu", 20), ("gpu_compute", 200), ("launch_overhead", 20)]
        .map(|(c, us)| (c.to_string(), us));
    assert_eq!(causes, want);
}

#[test]
fn without_sync_records_a_sync_call_waits_for_the_op_that_ended_during_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(0, 1000);
    // as the serial chain, but a cudaStreamSynchronize without a cuda_sync record (as in
    // older Kineto traces) and an op that ended before it on another stream
    t.launch(("aten::mul", 10, 30), ("mul_kernel", 7, 40, 200), 1);
    t.launch(("aten::add", 42, 15), ("add_kernel", 8, 58, 3), 2);
    t.sync_call(("cudaStreamSynchronize", 131), 60, 250, 3);
    let window = t.window(tmp.path());
    let (causes, length) = summary(&window);
    assert_eq!(length, 240, "{causes:?}");
    let last = path(&window).into_iter().last().unwrap();
    assert_eq!((last.name.as_str(), last.dur_us), ("aten::sync", 10));
    // as HTA: no wait, so the path ends with the kernel and the sync's 10 µs are off it
    let rows = report_with(&window, "critical_path_summary", &["infer_syncs=0"]);
    assert_eq!(rows[0][7].parse::<i64>().unwrap() / 1000, 230);
}

/// A 500 µs GEMM on stream 7 and a 100 µs add on stream 8 under it, then a device sync.
fn hidden_kernel(dir: &std::path::Path) -> std::path::PathBuf {
    let mut t = Trace::default();
    t.step(0, 1000);
    t.launch(("aten::mm", 10, 30), ("long_gemm", 7, 40, 500), 1);
    t.launch(("aten::add", 50, 30), ("short_add", 8, 80, 100), 2);
    t.device_sync(100, 560, 3);
    t.window(dir)
}

#[test]
fn a_kernel_under_another_streams_longer_kernel_is_not_on_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let window = hidden_kernel(tmp.path());
    let segments = path(&window);
    assert!(segments
        .iter()
        .any(|s| s.name == "long_gemm" && s.dur_us == 500));
    assert!(
        !segments.iter().any(|s| s.name == "short_add"),
        "{segments:?}"
    );
    // the path: aten::mm to its launch, the launch delay, the GEMM, the sync's end
    assert_eq!(summary(&window).1, 10 + 20 + 500 + 10);
}

#[test]
fn a_what_if_shortens_the_matched_ops_and_the_path_moves_to_the_hidden_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let window = hidden_kernel(tmp.path());
    let speedup = "speedup=long%=0.1";
    // step_ns, path_ns, measured_path_ns, whatif_step_ns of the summary's first row (µs)
    let lengths = |params: &[&str]| -> Vec<i64> {
        let rows = report_with(&window, "critical_path_summary", params);
        [2, 7, 8, 9]
            .map(|i| rows[0][i].parse::<i64>().unwrap() / 1000)
            .to_vec()
    };
    // as measured: mm to its launch, the launch delay, the GEMM, the sync's end
    assert_eq!(lengths(&[]), vec![1000, 540, 540, 1000]);
    // the GEMM at a tenth (50 µs) ends before short_add, which now bounds the step: mm, its
    // launch call, to add, add's launch delay, short_add, the sync's end
    let shortened = 10 + 10 + 10 + 10 + 20 + 100 + 10;
    assert_eq!(
        lengths(&[speedup]),
        vec![1000, shortened, 540, 1000 - (540 - shortened)]
    );
    let segments: Vec<Vec<String>> = report_with(&window, "critical_path", &[speedup]);
    // dur_ns, measured_dur_ns of an op's own time
    let named = |name: &str| {
        segments
            .iter()
            .find(|r| r[3] == "operator" && r[5] == name)
            .map(|r| (r[12].clone(), r[13].clone()))
    };
    assert_eq!(named("short_add"), Some(("100000".into(), "100000".into())));
    assert_eq!(named("long_gemm"), None);
    // a cause is a pattern too; a factor of 1 changes nothing
    assert_eq!(
        lengths(&["speedup=gpu_compute=1"]),
        vec![1000, 540, 540, 1000]
    );
    let no_launch = lengths(&["speedup=launch_overhead=0"]);
    assert_eq!(no_launch[1], 540 - 20);
}

#[test]
fn a_host_stall_between_launches_bounds_the_step_on_the_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(0, 2000);
    t.launch(("aten::relu", 10, 30), ("relu_kernel", 7, 40, 50), 1);
    // the host works 800 µs before the next launch, with the GPU idle
    t.op("aten::item", 50, 800);
    t.launch(("aten::relu", 860, 30), ("relu_kernel", 7, 890, 50), 2);
    t.device_sync(900, 950, 3);
    let window = t.window(tmp.path());
    let segments = path(&window);
    assert!(
        segments
            .iter()
            .any(|s| s.name == "aten::item" && s.dur_us == 800 && s.bound_by == "cpu"),
        "{segments:?}"
    );
    let (causes, length) = summary(&window);
    let cpu = causes.iter().find(|(c, _)| c == "cpu").unwrap().1;
    assert!(cpu * 100 >= 80 * length, "cpu {cpu} of {length} µs");
}

#[test]
fn the_backward_thread_continues_the_forward_threads_call_stack() {
    // forward: aten::linear [10, 110) under a `forward` annotation on the main thread; then
    // the autograd thread's MmBackward0 [120, 320). HTA moves the backward thread's ops onto
    // the forward thread's stack, so the path runs through both (300 µs), not the longer alone.
    let (main, autograd) = ((PID, PID), (PID, PID + 1));
    let trace = |forward_threads: &[(i64, i64)]| {
        let mut t = Trace::default();
        t.step(0, 1000);
        for &thread in forward_threads {
            t.x("user_annotation", "forward", thread, (5, 110), json!({}));
        }
        t.op("aten::linear", 10, 100);
        let backward = "autograd::engine::evaluate_function: MmBackward0";
        t.x("cpu_op", backward, autograd, (120, 200), json!({}));
        t
    };
    let (tmp, tmp_apart) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let merged = trace(&[main]).window(tmp.path());
    assert_eq!(summary(&merged), (vec![("cpu".to_string(), 300)], 300));
    let ops: Vec<String> = path(&merged).into_iter().map(|s| s.name).collect();
    assert_eq!(
        ops,
        [
            "aten::linear",
            "",
            "autograd::engine::evaluate_function: MmBackward0"
        ]
    );
    // two threads with `forward` ops: HTA cannot tell which is the forward pass, no merge
    let apart = trace(&[main, autograd]).window(tmp_apart.path());
    assert_eq!(summary(&apart), (vec![("cpu".to_string(), 200)], 200));
}

#[test]
fn a_stream_waits_on_another_streams_event_through_a_sync_edge() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(0, 1000);
    // the producer runs 40..440 on stream 7; its event is recorded at 50
    t.launch(("aten::mm", 10, 30), ("producer", 7, 40, 400), 1);
    t.call("cudaEventRecord", 135, 50, 5, 2);
    // stream 8 waits on that event (at 60), then its consumer is launched at 70 and runs
    // when the producer is done
    t.call("cudaStreamWaitEvent", 147, 60, 5, 3);
    let wait = json!({"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": 7,
        "wait_on_cuda_event_record_corr_id": 2, "wait_on_cuda_event_id": 1, "stream": 8,
        "correlation": 3, "device": 0, "context": 1});
    t.x("cuda_sync", "Stream Wait Event", (0, 8), (62, 1), wait);
    t.launch(("aten::add", 60, 30), ("consumer", 8, 440, 100), 4);
    t.device_sync(100, 545, 5);
    let window = t.window(tmp.path());
    let segments = path(&window);
    let kinds: Vec<(&str, &str)> = segments
        .iter()
        .map(|s| (s.kind.as_str(), s.name.as_str()))
        .collect();
    let producer = kinds.iter().position(|k| *k == ("operator", "producer"));
    let consumer = kinds.iter().position(|k| *k == ("operator", "consumer"));
    let (producer, consumer) = (producer.unwrap(), consumer.unwrap());
    assert_eq!(consumer, producer + 2, "{kinds:?}");
    assert_eq!(kinds[producer + 1], ("sync", "producer"));
    assert_eq!(summary(&window).1, 10 + 20 + 400 + 100 + 10);
}

#[test]
fn a_graph_replay_waits_for_its_launch_and_its_kernels_are_on_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let mut t = Trace::default();
    t.step(0, 1000);
    // one cudaGraphLaunch (20..30) replays two kernels back to back on stream 7: 40..140, 142..242
    t.op("aten::graph_replay", 10, 30);
    t.call("cudaGraphLaunch", 311, 20, 10, 1);
    t.kernel("graph_gemm", 7, 40, 100, 1);
    t.kernel("graph_relu", 7, 142, 100, 1);
    t.device_sync(50, 250, 2);
    let window = t.window(tmp.path());
    assert_eq!(
        timed(&path(&window)),
        vec![
            ("operator", "aten::graph_replay", 10),
            ("launch", "graph_gemm", 20),
            ("operator", "graph_gemm", 100),
            ("kernel_kernel", "graph_gemm", 2),
            ("operator", "graph_relu", 100),
            ("operator", "aten::sync", 10),
        ]
    );
}

#[test]
fn an_archive_has_one_path_per_window_and_step_each_as_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let window = serial_chain(tmp.path());
    let archive = tmp.path().join("archive");
    for id in ["window_id=000001", "window_id=000002"] {
        crate::support::copy_dir(&window, &archive.join(id));
    }
    let alone = report(&window, "critical_path_summary");
    let rows = report(&archive, "critical_path_summary");
    assert_eq!(rows.len(), 2 * alone.len());
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], ["1", "2"][i / alone.len()]);
        assert_eq!(row[1..], alone[i % alone.len()][..]);
    }
}

#[test]
fn htas_event_sync_trace_waits_for_the_spin_kernel_through_its_event() {
    // HTA's own critical-path test trace (tests/fixtures/kineto/hta_critical_path/, see
    // data/README.md): the host records an event after a long spin kernel and synchronizes on
    // it, so the step's path must reach the kernel and come back to the CPU by the event wait
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("window");
    let trace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto/hta_critical_path/cuda_event_sync__event_sync_trace.json.gz");
    succeeded(
        Command::new(env!("CARGO_BIN_EXE_tracesql"))
            .args(["import", "kineto"])
            .arg(&trace)
            .arg("--output")
            .arg(&window),
    );
    let segments = path(&window);
    let kernel = segments
        .iter()
        .position(|s| s.kind == "operator" && s.name.contains("spin_kernel"))
        .unwrap_or_else(|| panic!("{segments:?}"));
    assert_eq!(segments[kernel - 1].kind, "launch");
    assert_eq!(segments[kernel + 1].kind, "sync");
    assert!(
        segments[kernel + 1..]
            .iter()
            .all(|s| s.bound_by.is_empty() || s.bound_by == "cpu"),
        "{segments:?}"
    );
    summary(&window);
}

/// `--profile` names each step of the report's script with its time; `--explain TABLE`
/// prints, with its metrics, the plan that made a step's table. Neither changes the answer.
#[test]
fn profile_and_explain_show_the_reports_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let window = serial_chain(tmp.path());
    let run = |flags: &[&str]| {
        succeeded(
            Command::new(env!("CARGO_BIN_EXE_tracesql"))
                .args(["report", "critical_path_summary", "--format", "csv", "-w"])
                .arg(&window)
                .args(flags),
        )
    };
    let plain = run(&[]);
    let table = "_cp_path__critical_path_summary";
    let profiled = run(&["--profile", "--explain", table]);
    let stderr = String::from_utf8(profiled.stderr).unwrap();
    for step in ["_cp_step", "_cp_gpu", "_cp_sync", "_cp_path"] {
        let name = format!("TABLE {step}__critical_path_summary: ");
        let line = (stderr.lines().find(|l| l.contains(&name)))
            .unwrap_or_else(|| panic!("no step {step} in:\n{stderr}"));
        assert!(line.contains(" s wall, "), "{line}");
    }
    assert!(
        stderr.contains("output_rows="),
        "no plan with metrics:\n{stderr}"
    );
    assert_eq!(profiled.stdout, plain.stdout);
    assert!(String::from_utf8_lossy(&plain.stderr).is_empty());
    // only a step that creates a table is explained, not a query whose columns share the name
    succeeded(
        Command::new(env!("CARGO_BIN_EXE_tracesql"))
            .args(["query", "--explain", "a", "-w"])
            .arg(&window)
            .arg("select a as b from (select 1 as a)"),
    );
}
