//! Batch conversion: every window of an archive exported on its own, in parallel.
//!
//! In: an archive (or one window) and an output folder. Out: one trace per window and format,
//! named after the window's partition path (`rank=3/window_id=000123.json.gz`), each written
//! atomically by the `export` stage. A window that fails is reported and never stops the
//! others; an output newer than every file of its window is skipped unless forced; a raised
//! cancel flag stops taking windows and drops those in flight (their temporary files with
//! them), so a re-run resumes where this one stopped.

mod progress;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub use progress::{Progress, ProgressMode};

use crate::error::Error;
use crate::export::{export_chrome, export_pftrace, ExportConfig, PftraceConfig};
use crate::window::{find_windows, Found, WindowDir};
use crate::Result;

/// One output format of a conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome trace JSON, gzipped (`.json.gz`).
    Chrome,
    /// Perfetto protobuf (`.pftrace`).
    Perfetto,
}

impl TraceFormat {
    pub fn extension(self) -> &'static str {
        match self {
            TraceFormat::Chrome => "json.gz",
            TraceFormat::Perfetto => "pftrace",
        }
    }
}

/// What to convert and where.
#[derive(Clone, Debug)]
pub struct ConvertConfig {
    pub archive: PathBuf,
    pub output: PathBuf,
    pub formats: Vec<TraceFormat>,
    /// windows converted at once (at least 1)
    pub jobs: usize,
    /// rewrite outputs that are up to date
    pub force: bool,
    /// split each Chrome trace into parts of at most this many bytes of JSON
    /// ([`crate::export::split`]); None writes each whole
    pub max_size: Option<u64>,
}

/// How one window went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// at least one output written
    Converted,
    /// every output newer than every file of the window
    UpToDate,
    /// the one-line reason
    Failed(String),
}

/// One window's result.
#[derive(Clone, Debug)]
pub struct WindowReport {
    /// the window folder
    pub window: PathBuf,
    /// its outputs, relative to the output folder
    pub outputs: Vec<PathBuf>,
    pub outcome: Outcome,
    /// events written to its outputs by this run (0 when none was written)
    pub events: u64,
}

/// What a conversion did, windows in archive order.
#[derive(Debug, Default)]
pub struct ConvertSummary {
    pub reports: Vec<WindowReport>,
    /// windows neither finished nor started because the cancel flag was raised
    pub not_done: usize,
    pub cancelled: bool,
}

impl ConvertSummary {
    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.reports.iter().filter(|r| pred(&r.outcome)).count()
    }
    pub fn converted(&self) -> usize {
        self.count(|o| *o == Outcome::Converted)
    }
    pub fn up_to_date(&self) -> usize {
        self.count(|o| *o == Outcome::UpToDate)
    }
    pub fn failed(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.reports.iter().filter_map(|r| match &r.outcome {
            Outcome::Failed(reason) => Some((r.window.as_path(), reason.as_str())),
            _ => None,
        })
    }
}

/// The output of `window` in `format`, relative to the output folder: its partition path
/// (`host=a/window_id=1.pftrace`), or its folder name for a lone window.
pub fn output_path(window: &WindowDir, format: TraceFormat) -> PathBuf {
    let mut path = PathBuf::new();
    let name = match window.partitions.split_last() {
        Some(((key, value), parents)) => {
            for (k, v) in parents {
                path.push(format!("{k}={v}"));
            }
            format!("{key}={value}")
        }
        None => window
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "window".into()),
    };
    path.push(format!("{name}.{}", format.extension()));
    path
}

/// The windows of `config.archive` (with the archive's warnings), for [`convert`].
pub fn find(config: &ConvertConfig) -> Result<Found> {
    find_windows(&config.archive)
}

/// Convert `windows` (from [`find`]). `on_done` hears of each window as it finishes (from
/// worker tasks). Raising `cancel` stops the conversion: windows in flight are dropped and
/// leave no output.
pub async fn convert(
    config: &ConvertConfig,
    windows: Vec<WindowDir>,
    cancel: Arc<AtomicBool>,
    on_done: Arc<dyn Fn(&WindowReport) + Send + Sync>,
) -> Result<ConvertSummary> {
    crate::file::refuse_writing_into(&config.output, &[&config.archive], "--output")?;
    let windows = Arc::new(windows);
    let slots: Arc<Vec<Mutex<Option<WindowReport>>>> =
        Arc::new(windows.iter().map(|_| Mutex::new(None)).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let config = Arc::new(config.clone());
    let mut workers = Vec::new();
    for _ in 0..config.jobs.max(1).min(windows.len()) {
        let (windows, slots, next) = (windows.clone(), slots.clone(), next.clone());
        let (config, cancel, on_done) = (config.clone(), cancel.clone(), on_done.clone());
        workers.push(tokio::spawn(async move {
            while !cancel.load(Ordering::SeqCst) {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(window) = windows.get(i) else { break };
                // A window is its own task: a panic in it is that window's failure.
                let mut job = tokio::spawn(convert_window(window.clone(), config.clone()));
                let (outcome, events) = tokio::select! {
                    joined = &mut job => match joined {
                        Ok(Ok(done)) => done,
                        Ok(Err(e)) => (Outcome::Failed(one_line(&e.to_string())), 0),
                        Err(e) => (Outcome::Failed(format!("internal: {e}")), 0),
                    },
                    () = raised(&cancel) => {
                        // Dropping the export drops its AtomicFile: no partial output. Wait
                        // for the drop, so nothing is left once `convert` returns.
                        job.abort();
                        let _ = job.await;
                        break;
                    }
                };
                let report = WindowReport {
                    window: window.path.clone(),
                    outputs: outputs_of(window, &config.formats),
                    outcome,
                    events,
                };
                on_done(&report);
                *slots[i].lock().expect("no worker panics holding a slot") = Some(report);
            }
        }));
    }
    for worker in workers {
        worker
            .await
            .map_err(|e| Error::Internal(format!("convert worker: {e}")))?;
    }
    let mut summary = ConvertSummary {
        cancelled: cancel.load(Ordering::SeqCst),
        ..Default::default()
    };
    let slots = Arc::try_unwrap(slots).expect("every worker has finished");
    for slot in slots {
        match slot.into_inner().expect("no worker panics holding a slot") {
            Some(report) => summary.reports.push(report),
            None => summary.not_done += 1,
        }
    }
    Ok(summary)
}

fn outputs_of(window: &WindowDir, formats: &[TraceFormat]) -> Vec<PathBuf> {
    formats.iter().map(|f| output_path(window, *f)).collect()
}

/// Resolves once `flag` is raised (polled: a signal handler can only set a flag).
async fn raised(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How `window` went, and the events written to its outputs.
async fn convert_window(window: WindowDir, config: Arc<ConvertConfig>) -> Result<(Outcome, u64)> {
    let newest_input = newest_file(&window.path)?;
    let mut wrote = false;
    let mut events = 0;
    for format in &config.formats {
        let output = config.output.join(output_path(&window, *format));
        let split = config.max_size;
        // A split trace's listing is written last: it stands for its parts.
        let written = match split {
            Some(_) => crate::export::split::index_path(&output),
            None => output.clone(),
        };
        if !config.force && modified(&written).is_some_and(|out| out > newest_input) {
            continue;
        }
        if let Some(dir) = output.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let summary = match format {
            TraceFormat::Chrome if split.is_some() => {
                let config = ExportConfig {
                    window: window.path.clone(),
                    output,
                    ..ExportConfig::default()
                };
                let budget = split.expect("split is Some");
                crate::export::export_chrome_split(&config, budget).await?.0
            }
            TraceFormat::Chrome => {
                export_chrome(&ExportConfig {
                    window: window.path.clone(),
                    output,
                    ..ExportConfig::default()
                })
                .await?
            }
            TraceFormat::Perfetto => {
                let config = PftraceConfig {
                    window: window.path.clone(),
                    output,
                    compression_level: 1,
                    ..PftraceConfig::default()
                };
                match split {
                    Some(budget) => {
                        crate::export::export_pftrace_split(&config, budget)
                            .await?
                            .0
                    }
                    None => export_pftrace(&config).await?,
                }
            }
        };
        events += summary.events;
        wrote = true;
    }
    let outcome = if wrote {
        Outcome::Converted
    } else {
        Outcome::UpToDate
    };
    Ok((outcome, events))
}

/// The latest modification time of the files in `dir` (and of `dir` itself).
fn newest_file(dir: &Path) -> Result<SystemTime> {
    let mut newest = modified(dir).unwrap_or(SystemTime::UNIX_EPOCH);
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if let Some(t) = modified(&path) {
            newest = newest.max(t);
        }
    }
    Ok(newest)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(path: &str, partitions: &[(&str, &str)]) -> WindowDir {
        WindowDir {
            path: PathBuf::from(path),
            partitions: partitions
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            table_files: Vec::new(),
            cpu_trace: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn outputs_are_named_after_the_partition_path() {
        let w = window(
            "a/rank=3/window_id=000123",
            &[("rank", "3"), ("window_id", "000123")],
        );
        assert_eq!(
            output_path(&w, TraceFormat::Chrome),
            PathBuf::from("rank=3/window_id=000123.json.gz")
        );
        assert_eq!(
            output_path(&w, TraceFormat::Perfetto),
            PathBuf::from("rank=3/window_id=000123.pftrace")
        );
        let lone = window("runs/step12", &[]);
        assert_eq!(
            output_path(&lone, TraceFormat::Perfetto),
            PathBuf::from("step12.pftrace")
        );
    }
}
