//! Ctrl-C on any query: the shell (under a pseudo-terminal) cancels a three-way join, is
//! back at its prompt and answering at once, and the cancelled work stops using CPU;
//! `query` and `export` exit with status 130 and leave no output file, not even a temporary
//! one.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tracesql::synth::{write_window, SynthConfig};

/// A join no machine finishes: 6.5 k kernels three times over (2.8 * 10^11 rows).
const ENDLESS: &str = "select count(*) from kernel a, kernel b, kernel c \
    where a.start_ns + b.start_ns > c.end_ns";

fn window(scratch: &Path, events: u64) -> PathBuf {
    let dir = scratch.join("w");
    write_window(&SynthConfig::new(events, 3), &dir).unwrap();
    dir
}

/// CPU time (user + system) of process `pid` so far.
fn cpu_time(pid: i32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // fields after the command's closing parenthesis; utime and stime are the 14th and 15th
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / per_second)
}

/// The pid of the one process whose command line names `path`.
fn pid_of_the_process_reading(path: &Path) -> i32 {
    let needle = path.to_str().unwrap();
    let pids: Vec<i32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|pid: &i32| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            (cmdline.split(|b| *b == 0)).any(|arg| arg == needle.as_bytes())
        })
        .collect();
    assert_eq!(pids.len(), 1, "processes reading {needle}: {pids:?}");
    pids[0]
}

/// Wait until `child` is busy: it has used `cpu` of CPU time, or begun a temporary output
/// file in `dir`; at most 60 s.
fn wait_until_busy(child: &mut Child, cpu: Duration, dir: &Path) {
    let started = Instant::now();
    loop {
        let writing = std::fs::read_dir(dir)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"));
        if writing || cpu_time(child.id() as i32) >= cpu {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ended before it was interrupted: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no output begun"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Send SIGINT to `child`, as Ctrl-C does; its exit code and what is left in `dir`.
fn interrupt(mut child: Child, dir: &Path) -> (Option<i32>, Vec<String>) {
    // SAFETY: kill with a live child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let left = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    (status.code(), left)
}

#[test]
fn query_interrupted_exits_130_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let window = window(tmp.path(), 20_000);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["query", "-w", window.to_str().unwrap(), "-o"])
        .arg(out_dir.join("rows.parquet"))
        .arg(ENDLESS)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // writing its output (the query's file is begun before the first row)
    wait_until_busy(&mut child, Duration::MAX, &out_dir);
    let (code, left) = interrupt(child, &out_dir);
    assert_eq!(code, Some(130));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn export_interrupted_exits_130_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    // large enough that the export is still at work when interrupted (seconds)
    let window = window(tmp.path(), 300_000);
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["export", "-w", window.to_str().unwrap(), "-o"])
        .arg(out_dir.join("trace.json.gz"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // a second into its work (its output file is begun only at the end)
    wait_until_busy(&mut child, Duration::from_secs(1), &out_dir);
    let (code, left) = interrupt(child, &out_dir);
    assert_eq!(code, Some(130));
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn ctrl_c_in_the_shell_stops_a_three_way_join_and_its_cpu() {
    use rexpect::session::spawn_command;

    let tmp = tempfile::tempdir().unwrap();
    let window = window(tmp.path(), 20_000);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracesql"));
    cmd.args(["shell", "-w", window.to_str().unwrap()])
        .env("TERM", "xterm")
        .env("TRACESQL_HISTORY", tmp.path().join("history"));
    let mut p = spawn_command(cmd, Some(60_000)).unwrap();
    p.exp_string("tracesql> ").unwrap();
    let pid = pid_of_the_process_reading(&window);
    p.send(&format!("{ENDLESS};\r")).unwrap();
    p.flush().unwrap();
    p.exp_string("running ").unwrap();
    // The goal is one second; the bounds leave room for a loaded test machine.
    let cancelled = Instant::now();
    p.send_control('c').unwrap();
    p.exp_string("cancelled").unwrap();
    p.exp_string("tracesql> ").unwrap();
    p.send("select 6 * 7 as answer;\r").unwrap();
    p.flush().unwrap();
    p.exp_regex(r"\| 42 +\|").unwrap();
    let answered = cancelled.elapsed();
    assert!(
        answered < Duration::from_secs(3),
        "answered after {answered:?}"
    );
    // The cancelled join no longer computes: little CPU from 1 s after Ctrl-C to 3 s after.
    std::thread::sleep(Duration::from_secs(1).saturating_sub(cancelled.elapsed()));
    let before = cpu_time(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_time(pid) - before;
    assert!(
        used < Duration::from_millis(500),
        "{used:?} of CPU in the 2 s after the cancel"
    );
    p.send_line(".quit").unwrap();
    p.exp_eof().unwrap();
}
