//! Differential test against the oracle: synthetic windows from many seeds and feature mixes
//! (up to ~50 k events, every `--without` part but the CPU trace an export needs,
//! CUDA graphs, annotation-heavy mixes, CPU trace
//! bases far before the first activity) are exported by us in both formats and by
//! `../shared/seed/oracle.py`, then compared: Chrome JSON as a multiset of events
//! (`crate::export::differences`) and, within each category, in the reference's order
//! (`order_differences`: the sync events once came in a hash join's), the `.pftrace` against the oracle's pre-encoding content
//! with the independent decoder and comparer `tests/perfetto/compare.py`.
//!
//! In `cargo test` it runs the fixed cases of `tests/oracle/cases.txt` (every window that
//! ever failed is kept there), then fresh random ones until about 100 s have passed, each
//! printed so a failure can be replayed. `scripts/check-oracle.sh MINUTES` runs it for long
//! (`TRACESQL_ORACLE_SECONDS`) and keeps the failures (`TRACESQL_ORACLE_FAILED`). Without python3, the seed or PyPI it says SKIPPED loudly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use tracesql::export::{export_chrome, export_pftrace, ExportConfig, PftraceConfig};
use tracesql::synth::{write_window, SynthConfig};

use crate::export::{differences, order_differences, read_json};

/// The parts `tracesql synth --without` takes, but the CPU trace (an export needs it).
const PARTS: [&str; 11] = [
    "graphs",
    "graph_deps",
    "host_nodes",
    "event_nodes",
    "syncs",
    "annotations",
    "counters",
    "lanes",
    "metadata",
    "driver",
    "overhead",
];

/// One synthetic window: the words of a `tests/oracle/cases.txt` line.
#[derive(Clone, Debug)]
struct Case {
    seed: u64,
    events: u64,
    without: Vec<String>,
    base_lead_ns: i64,
}

impl Case {
    fn parse(line: &str) -> Case {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "tests/oracle/cases.txt line `{line}`");
        Case {
            seed: f[0].parse().unwrap(),
            events: f[1].parse().unwrap(),
            without: match f[2] {
                "-" => Vec::new(),
                parts => parts.split(',').map(str::to_string).collect(),
            },
            base_lead_ns: f[3].parse().unwrap(),
        }
    }

    /// The line that replays it.
    fn line(&self) -> String {
        let without = match self.without.is_empty() {
            true => "-".to_string(),
            false => self.without.join(","),
        };
        format!(
            "{} {} {} {}",
            self.seed, self.events, without, self.base_lead_ns
        )
    }

    /// A random case: size log-uniform in 200..50 000, each part left out with chance 1/4,
    /// in one case of four an annotation-heavy mix (annotations and GPU ops only), in one of
    /// three a CPU trace base 10^16..10^17.5 ns before the first activity.
    fn random(draw: &mut impl FnMut() -> u64) -> Case {
        let events = (200.0 * 250f64.powf((draw() % 10_000) as f64 / 10_000.0)) as u64;
        let without: Vec<String> = match draw() % 4 {
            0 => ["counters", "overhead", "syncs", "driver", "metadata"]
                .map(str::to_string)
                .to_vec(),
            _ => PARTS
                .iter()
                .filter(|_| draw().is_multiple_of(4))
                .map(|p| p.to_string())
                .collect(),
        };
        let base_lead_ns = match draw() % 3 {
            0 => 10i64.pow(16) + (draw() % 3 * 10u64.pow(17)) as i64 + (draw() % 1000) as i64,
            _ => 5_000_000_000,
        };
        Case {
            seed: draw() % 1_000_000,
            events,
            without,
            base_lead_ns,
        }
    }

    fn config(&self) -> SynthConfig {
        let mut config = SynthConfig::new(self.events, self.seed);
        config.base_lead_ns = self.base_lead_ns;
        for part in &self.without {
            assert!(config.features.leave_out(part), "unknown part `{part}`");
        }
        config
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixed_cases() -> Vec<Case> {
    let text = std::fs::read_to_string(root().join("tests/oracle/cases.txt")).unwrap();
    (text.lines())
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(Case::parse)
        .collect()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The pythons: the oracle's (numpy, pyarrow) and the comparer's (perfetto), or why not.
fn pythons() -> Result<(PathBuf, PathBuf), String> {
    if !root().join("../shared/seed/oracle.py").exists() {
        return Err(format!(
            "no oracle at {}",
            root().join("../shared/seed").display()
        ));
    }
    if Command::new("python3").arg("--version").output().is_err() {
        return Err("no python3".into());
    }
    let oracle = crate::venv::python_with("oracle", &["numpy", "pyarrow"], "numpy, pyarrow")?;
    let perfetto = crate::perfetto::perfetto_python().ok_or("no perfetto python")?;
    Ok((oracle, perfetto))
}

/// Export `case` both ways and compare; the differences found, empty when equal.
async fn check(case: &Case, oracle: &Path, perfetto: &Path, scratch: &Path) -> Vec<String> {
    let window = scratch.join("window");
    let _ = std::fs::remove_dir_all(&window);
    write_window(&case.config(), &window).unwrap();
    let seed = root().join("../shared/seed/oracle.py");
    let (reference, ir) = (scratch.join("reference.json"), scratch.join("ir.json"));
    // Both oracle runs go on in the background while we export.
    let chrome_oracle = Command::new(oracle)
        .arg(&seed)
        .arg("--window-dir")
        .arg(&window)
        .arg("--out")
        .arg(&reference)
        .args(["--trace-name", "oracle"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pftrace_oracle = Command::new(oracle)
        .arg(&seed)
        .arg("--window-dir")
        .arg(&window)
        .arg("--out")
        .arg(scratch.join("reference.pftrace"))
        .env("SEED_PFTRACE_IR", &ir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ours_json, ours_pftrace) = (scratch.join("ours.json"), scratch.join("ours.pftrace"));
    let chrome = ExportConfig {
        window: window.clone(),
        output: ours_json.clone(),
        trace_name: Some("oracle".into()),
        ..ExportConfig::default()
    };
    export_chrome(&chrome).await.unwrap();
    let pftrace = PftraceConfig {
        window: window.clone(),
        output: ours_pftrace.clone(),
        compression_level: 1,
        arch: Some("sm_90".into()),
        process_id: Some(4242),
        process_name: Some("python".into()),
        ..PftraceConfig::default()
    };
    export_pftrace(&pftrace).await.unwrap();

    let mut found = Vec::new();
    let out = chrome_oracle.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle (chrome): {}", text(&out));
    let (ours_trace, reference_trace) = (read_json(&ours_json), read_json(&reference));
    let mut diffs = differences(&ours_trace, &reference_trace);
    if diffs.is_empty() {
        diffs = order_differences(&ours_trace, &reference_trace);
    }
    if !diffs.is_empty() {
        found.push(format!(
            "chrome: {} differences, first: {}",
            diffs.len(),
            diffs[..diffs.len().min(3)].join(" | ")
        ));
    }
    let out = pftrace_oracle.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle (pftrace): {}", text(&out));
    let out = Command::new(perfetto)
        .arg(root().join("tests/perfetto/compare.py"))
        .arg(&ir)
        .arg(&ours_pftrace)
        .output()
        .unwrap();
    if !out.status.success() {
        found.push(format!("pftrace: {}", text(&out).trim()));
    }
    found
}

/// Append `case` to `$TRACESQL_ORACLE_FAILED` when set (scripts/check-oracle.sh sets it).
fn keep(case: &Case) {
    use std::io::Write;
    let Some(path) = std::env::var_os("TRACESQL_ORACLE_FAILED") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(file, "{}", case.line()).unwrap();
}

/// Fresh cases' random numbers: splitmix64 from the clock, the seed printed.
fn fresh_draw() -> (u64, impl FnMut() -> u64) {
    let seed = std::env::var("TRACESQL_ORACLE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
            now.unwrap().as_nanos() as u64
        });
    let mut state = seed;
    let draw = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (seed, draw)
}

#[tokio::test(flavor = "multi_thread")]
async fn random_windows_export_as_the_oracle_does_in_both_formats() {
    let started = Instant::now();
    let (oracle, perfetto) = match pythons() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("\n*** SKIPPED the differential test against the oracle: {why} ***\n");
            return;
        }
    };
    let budget = std::env::var("TRACESQL_ORACLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(100), Duration::from_secs);
    let (fresh_seed, mut draw) = fresh_draw();
    eprintln!("oracle differential test: fresh cases from TRACESQL_ORACLE_SEED={fresh_seed}");
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let (mut fixed, mut fresh) = (0, 0);
    let mut cases = fixed_cases().into_iter();
    loop {
        let case = match cases.next() {
            Some(case) => {
                fixed += 1;
                case
            }
            // at least two fresh cases, then as many as the budget holds
            None if fresh < 2 || started.elapsed() < budget => {
                fresh += 1;
                Case::random(&mut draw)
            }
            None => break,
        };
        let found = check(&case, &oracle, &perfetto, scratch.path()).await;
        if !found.is_empty() {
            eprintln!("FAILED case `{}`: {}", case.line(), found.join("\n  "));
            keep(&case);
            failures.push(format!("{}\n  {}", case.line(), found.join("\n  ")));
        }
    }
    eprintln!(
        "oracle differential test: {fixed} fixed and {fresh} fresh windows in {:.0} s, {} failed",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "windows that differ from the oracle (add each line to tests/oracle/cases.txt):\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_case_line_replays_the_case() {
    let mut draw = fresh_draw().1;
    for _ in 0..50 {
        let case = Case::random(&mut draw);
        let again = Case::parse(&case.line());
        assert_eq!(again.line(), case.line());
        assert_eq!(
            format!("{:?}", again.config()),
            format!("{:?}", case.config())
        );
    }
}
