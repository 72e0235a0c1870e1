//! Diagnostics, on stderr: each stage's wall and CPU time and the process's memory (where a
//! command spends its time and memory; CPU time stays honest on a busy machine), and
//! `EXPLAIN ANALYZE` of one export plan. What to print is set once, by the CLI
//! (`--profile`, `--explain PLAN`, `--plan-jobs N`, or their `TRACESQL_*` variables), with
//! [`configure`]; the library reads no environment.

use std::sync::OnceLock;

use datafusion::prelude::DataFrame;
use std::time::Instant;

/// What the diagnostics print, for the whole process.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    /// print each stage's time and memory
    pub stages: bool,
    /// print `EXPLAIN ANALYZE` of the export plan of this name
    pub explain: Option<String>,
    /// export plans encoded at once (default: one per core); 1 gives per-plan profiles that
    /// add up
    pub plan_jobs: Option<usize>,
}

static SETTINGS: OnceLock<Diagnostics> = OnceLock::new();

/// Set the diagnostics, before any stage runs; later calls change nothing.
pub fn configure(diagnostics: Diagnostics) {
    let _ = SETTINGS.set(diagnostics);
}

pub(crate) fn settings() -> &'static Diagnostics {
    SETTINGS.get_or_init(Diagnostics::default)
}

/// Whether stage profiles are printed.
pub(crate) fn enabled() -> bool {
    settings().stages
}

/// A stage's start.
#[derive(Clone, Copy)]
pub(crate) struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            wall: Instant::now(),
            cpu: cpu_seconds(),
        }
    }

    /// Print `stage` with the time since this clock started.
    pub fn report(&self, stage: &str) {
        if enabled() {
            let (rss, peak) = memory_mb();
            eprintln!(
                "{stage}: {:.3} s wall, {:.3} s cpu, rss {rss} MB, peak {peak} MB",
                self.wall.elapsed().as_secs_f64(),
                cpu_seconds() - self.cpu
            );
        }
    }

    /// [`Clock::report`], then restart: stages one after another.
    pub fn mark(&mut self, stage: &str) {
        self.report(stage);
        *self = Clock::start();
    }
}

/// Print `line` under the stages, indented (a detail of the stage that follows).
pub(crate) fn note(line: &str) {
    if enabled() {
        eprintln!("  ({line})");
    }
}

fn cpu_seconds() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Resident and peak resident memory in MB (VmRSS, VmHWM); zeros where /proc is missing.
fn memory_mb() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// With `--explain <name>`, print `EXPLAIN ANALYZE` of the plan `name` (`frame`; it runs
/// once more): where a plan spends its time.
pub(crate) async fn explain(
    name: &str,
    frame: impl AsyncFnOnce() -> crate::Result<DataFrame>,
) -> crate::Result<()> {
    if settings().explain.as_deref() == Some(name) {
        let rows = frame().await?.explain(false, true)?.collect().await?;
        eprintln!(
            "{}",
            datafusion::arrow::util::pretty::pretty_format_batches(&rows)?
        );
    }
    Ok(())
}
