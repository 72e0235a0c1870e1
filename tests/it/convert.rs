//! `tracesql convert`: every window of an archive exported on its own; bad windows reported,
//! never stopping the others; re-runs skip what is up to date; partition paths kept.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use tracesql::synth::{write_window, SynthConfig};

use crate::support::*;

fn synth(dir: &Path, seed: u64) {
    write_window(&SynthConfig::new(300, seed), dir).unwrap();
}

fn convert(args: &[&str]) -> (Output, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .arg("convert")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stderr)
}

/// window_id=000001..3 good, 000004 with a truncated kernel.parquet, 000005 whose
/// cuda_runtime.parquet lacks correlation_id.
fn archive_with_bad_windows() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for id in 1..=5 {
        synth(&tmp.path().join(format!("window_id=00000{id}")), id);
    }
    let kernel = tmp.path().join("window_id=000004/kernel.parquet");
    let bytes = std::fs::read(&kernel).unwrap();
    std::fs::write(&kernel, &bytes[..bytes.len() / 2]).unwrap();
    let mut cols = runtime_columns();
    cols.retain(|(n, _)| *n != "correlation_id");
    write_parquet(
        &tmp.path().join("window_id=000005/cuda_runtime.parquet"),
        cols,
    );
    tmp
}

fn mtime(path: &Path) -> SystemTime {
    std::fs::metadata(path).unwrap().modified().unwrap()
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap();
                out.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn chrome_events(path: &Path) -> usize {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["traceEvents"].as_array().unwrap().len()
}

#[test]
fn good_windows_convert_bad_ones_are_reported_and_reruns_skip_what_is_done() {
    let archive = archive_with_bad_windows();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path();
    let args = [
        archive.path().to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "-j",
        "2",
    ];

    let (first, stderr) = convert(&args);
    assert_eq!(first.status.code(), Some(1), "{stderr}");
    assert_eq!(
        files_under(out),
        vec![
            "window_id=000001.json.gz",
            "window_id=000002.json.gz",
            "window_id=000003.json.gz"
        ],
        "no output and no temporary file for the bad windows"
    );
    for id in 1..=3 {
        let events = chrome_events(&out.join(format!("window_id=00000{id}.json.gz")));
        assert!(events > 300, "window {id}: {events} events");
    }
    let failure = |id: u32| {
        stderr
            .lines()
            .find(|l| l.starts_with("failed: ") && l.contains(&format!("window_id=00000{id}:")))
            .unwrap_or_else(|| panic!("no failure line for window {id}: {stderr}"))
            .to_string()
    };
    let truncated = failure(4);
    assert!(
        truncated.contains("kernel.parquet") && truncated.contains("not a readable Parquet"),
        "{truncated}"
    );
    let missing = failure(5);
    assert!(
        missing.contains("cuda_runtime.parquet") && missing.contains("`correlation_id`"),
        "{missing}"
    );
    assert!(
        stderr.contains("3 converted, 0 up to date, 2 failed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("5/5 windows"),
        "a plain progress line: {stderr}"
    );
    assert!(stderr.contains("error: 2 of 5 windows failed"), "{stderr}");

    // A re-run writes nothing that is up to date, and still reports the bad windows.
    let before: Vec<SystemTime> = (1..=3)
        .map(|id| mtime(&out.join(format!("window_id=00000{id}.json.gz"))))
        .collect();
    let (second, stderr) = convert(&args);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("0 converted, 3 up to date, 2 failed"),
        "{stderr}"
    );
    let after: Vec<SystemTime> = (1..=3)
        .map(|id| mtime(&out.join(format!("window_id=00000{id}.json.gz"))))
        .collect();
    assert_eq!(before, after);

    // A window file newer than its output makes that output stale.
    let touched = archive.path().join("window_id=000002/kernel.parquet");
    std::fs::File::options()
        .append(true)
        .open(&touched)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    let (third, stderr) = convert(&args);
    assert_eq!(third.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 converted, 2 up to date, 2 failed"),
        "{stderr}"
    );

    // --force rewrites every good window.
    let mut forced = args.to_vec();
    forced.push("--force");
    let (fourth, stderr) = convert(&forced);
    assert_eq!(fourth.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("3 converted, 0 up to date, 2 failed"),
        "{stderr}"
    );
    assert_eq!(files_under(out).len(), 3);
}

#[test]
fn nested_partitions_keep_their_relative_path_in_both_formats() {
    let archive = tempfile::tempdir().unwrap();
    synth(&archive.path().join("host=a/window_id=1"), 11);
    synth(&archive.path().join("host=b/window_id=2"), 12);
    let out_dir = tempfile::tempdir().unwrap();
    let (run, stderr) = convert(&[
        archive.path().to_str().unwrap(),
        "--output",
        out_dir.path().to_str().unwrap(),
        "--format",
        "both",
        "--quiet",
    ]);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(
        files_under(out_dir.path()),
        vec![
            "host=a/window_id=1.json.gz",
            "host=a/window_id=1.pftrace",
            "host=b/window_id=2.json.gz",
            "host=b/window_id=2.pftrace",
        ]
    );
    assert!(chrome_events(&out_dir.path().join("host=b/window_id=2.json.gz")) > 300);
    // --quiet: the summary line only, no progress.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("2 converted, 0 up to date, 0 failed"),
        "{stderr}"
    );
}

/// Run convert into `out`, send SIGINT once its first output exists, return its exit status
/// and stderr.
fn convert_interrupted(args: &[&str], out: &Path) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .arg("convert")
        .args(args)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let finished = |name: &String| !name.ends_with(".tmp");
    while !(out.exists() && files_under(out).iter().any(finished)) {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no output appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill() has no memory-safety preconditions; the pid is our live child's.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap(), stderr)
}

#[test]
fn an_interrupted_run_resumes_to_the_outputs_of_a_clean_run() {
    let archive = tempfile::tempdir().unwrap();
    for id in 1..=4 {
        let window = archive.path().join(format!("window_id=00000{id}"));
        write_window(&SynthConfig::new(2000, id), &window).unwrap();
    }
    // Both runs write to the same path, since a Chrome trace's traceName is its path.
    let scratch = tempfile::tempdir().unwrap();
    let (out, clean) = (scratch.path().join("out"), scratch.path().join("clean"));
    let args = [
        archive.path().to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--format",
        "both",
        "-j",
        "1",
    ];
    let (run, stderr) = convert(&args);
    assert!(run.status.success(), "{stderr}");
    std::fs::rename(&out, &clean).unwrap();

    let (status, stderr) = convert_interrupted(&args, &out);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let partial = files_under(&out);
    assert!(
        partial.iter().all(|f| !f.ends_with(".tmp")),
        "a temporary file was left: {partial:?}"
    );
    assert!(partial.len() < 8, "the run was interrupted before the end");

    let (rerun, stderr) = convert(&args);
    assert!(rerun.status.success(), "{stderr}");
    let complete = (1..=4)
        .filter(|id| {
            let stem = format!("window_id=00000{id}");
            partial.contains(&format!("{stem}.json.gz"))
                && partial.contains(&format!("{stem}.pftrace"))
        })
        .count();
    let summary = format!(
        "{} converted, {complete} up to date, 0 failed",
        4 - complete
    );
    assert!(stderr.contains(&summary), "expected `{summary}`: {stderr}");
    let names = files_under(&clean);
    assert_eq!(files_under(&out), names);
    for name in names {
        let (ours, theirs) = (out.join(&name), clean.join(&name));
        if name.ends_with(".pftrace") {
            assert!(
                std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap(),
                "{name}"
            );
        } else {
            let (a, b) = (
                crate::export::read_json(&ours),
                crate::export::read_json(&theirs),
            );
            assert_eq!(
                crate::export::differences(&a, &b),
                Vec::<String>::new(),
                "{name}"
            );
        }
    }
}
