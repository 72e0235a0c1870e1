//! `tracesql diff` beyond its views: the timeline of a step of both runs (`--timeline`), and
//! Kineto traces given as they are. The runs are tests/it/diff.rs's simulated ones.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::diff::{pair, trace, Change, GEMM};

#[test]
fn the_timeline_shows_a_step_of_both_runs_aligned_with_the_changed_kernels_marked() {
    let (tmp, base, new) = pair(Change {
        slow_gemm: true,
        extra_relu: true,
        ..Change::default()
    });
    let tracesql = || Command::new(env!("CARGO_BIN_EXE_tracesql"));
    let timeline = |file: &str, steps: &str| {
        let path = tmp.path().join(file);
        let out = crate::support::succeeded(
            tracesql()
                .arg("diff")
                .args([&base, &new])
                .args(["--steps", steps, "--timeline"])
                .arg(&path),
        );
        (path, String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (path, stderr) = timeline("step.json", "3");
    assert!(stderr.contains("step 3 of each run"), "{stderr}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    // which window an event is of: 0 BASE, 1 NEW (a merged trace's pids, see tests/it/merge.rs)
    let ordinal = |e: &Value| e["pid"].as_i64().unwrap() / super::merge::PID_STRIDE - 1;
    let names = |run: i64, cat: &str| -> Vec<String> {
        let mut names: Vec<String> = (events.iter())
            .filter(|e| e["cat"] == cat && e["ph"] == "X" && ordinal(e) == run)
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        names
    };
    // step 3's kernels only; the GEMM, 20 % slower, marked in both runs, the new relu as added
    let gemm_mark = |name: &str| name.starts_with("[+20% +4.") && name.ends_with(GEMM);
    let base_kernels = names(0, "kernel");
    assert_eq!(base_kernels.len(), 2, "{base_kernels:?}");
    assert!(
        base_kernels.iter().any(|n| gemm_mark(n)),
        "{base_kernels:?}"
    );
    assert!(
        base_kernels.iter().any(|n| n.starts_with("add_kernel")),
        "{base_kernels:?}"
    );
    let new_kernels = names(1, "kernel");
    assert_eq!(new_kernels.len(), 3, "{new_kernels:?}");
    assert!(new_kernels.iter().any(|n| gemm_mark(n)), "{new_kernels:?}");
    assert!(
        new_kernels.contains(&"[added] relu_kernel".to_string()),
        "{new_kernels:?}"
    );
    // the step starts at the same time in both, though NEW's started later
    let step_ts = |run: i64| -> f64 {
        let step = events
            .iter()
            .find(|e| e["name"] == "ProfilerStep#102" && ordinal(e) == run)
            .unwrap_or_else(|| panic!("no step 3 in window {run}"));
        step["ts"].as_f64().unwrap()
    };
    assert!(
        (step_ts(0) - step_ts(1)).abs() < 1e-3,
        "{} {}",
        step_ts(0),
        step_ts(1)
    );
    let process = |prefix: &str| {
        events.iter().any(|e| {
            e["name"] == "process_name" && e["args"]["name"].as_str().unwrap().starts_with(prefix)
        })
    };
    assert!(process("base step 3 · ") && process("new step 3 · "));

    // .pftrace: the same marks, in a trace Perfetto's protos decode
    let (path, _) = timeline("step.pftrace", "2-8");
    let packets = crate::perfetto::decode(&crate::perfetto::gunzip(&path));
    let text = format!("{packets:?}");
    assert!(
        text.contains("[added] relu_kernel"),
        "no mark in the .pftrace"
    );
    let Some(python) = crate::perfetto::perfetto_python() else {
        return;
    };
    let script = "import gzip,sys\n\
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n\
        t=pb.Trace(); t.ParseFromString(gzip.open(sys.argv[1]).read())\n\
        print('|'.join(sorted({p.track_descriptor.process.process_name for p in t.packet \
            if p.track_descriptor.HasField('process')})))";
    let out = Command::new(python)
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .unwrap();
    let processes = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        processes.contains("base step ") && processes.contains("new step "),
        "{processes}"
    );
}

#[test]
fn kineto_traces_diff_as_their_imported_windows_do() {
    let change = Change {
        slow_gemm: true,
        ..Change::default()
    };
    let (tmp, base, new) = pair(change);
    let traces: Vec<PathBuf> = [("base.json", Change::default()), ("new.json", change)]
        .iter()
        .map(|(name, change)| {
            let path = tmp.path().join(name);
            std::fs::write(&path, trace(*change).to_string()).unwrap();
            path
        })
        .collect();
    let diff = |base: &Path, new: &Path| {
        let out = crate::support::succeeded(
            Command::new(env!("CARGO_BIN_EXE_tracesql"))
                .arg("diff")
                .args([base, new])
                .args(["--by", "kernel", "--format", "csv"]),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let from_traces = diff(&traces[0], &traces[1]);
    assert!(from_traces
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("gemm_kernel,"));
    assert_eq!(from_traces, diff(&base, &new));
}
