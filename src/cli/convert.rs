//! `tracesql convert`: every window of an archive as a trace file, in parallel.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::bail;
use clap::{Args, ValueEnum};
use tracesql::convert::{self, ConvertConfig, Progress, ProgressMode, TraceFormat};

/// Convert every window of an archive into trace files, one per window named after its
/// partition path (rank=3/window_id=000123.json.gz, .pftrace), in parallel. Outputs newer
/// than every file of their window are skipped (--force rewrites them); a failed window is
/// reported and never stops the others; Ctrl-C leaves no partial file and a re-run resumes.
///
/// Examples:
///   tracesql convert runs/ --output traces/
///   tracesql convert runs/ --output traces/ --format both -j 4
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ConvertArgs {
    /// The archive (or one window) to convert
    #[arg(value_name = "ARCHIVE")]
    archive: PathBuf,
    /// The folder to write the traces into
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
    /// chrome (.json.gz), perfetto (.pftrace) or both
    #[arg(long, value_enum, default_value_t = Format::Chrome)]
    format: Format,
    /// Windows converted at once (default: the number of cores)
    #[arg(short, long, value_name = "N")]
    jobs: Option<usize>,
    /// Rewrite outputs that are up to date
    #[arg(long)]
    force: bool,
    /// Split each trace into parts of at most SIZE of uncompressed JSON or .pftrace (500MB):
    /// NAME.part001.json.gz, ... and NAME.parts.json, as `export --max-size` does
    #[arg(long, value_name = "SIZE")]
    max_size: Option<String>,
    /// No progress lines (the summary and failures are still printed)
    #[arg(short, long)]
    quiet: bool,
    /// Convert on the Ballista cluster at df://HOST:PORT: each window on the executor that
    /// runs it (the archive and --output on a path every executor shares)
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "df://HOST:PORT", conflicts_with = "jobs")]
    cluster: Option<tracesql::cluster::Endpoint>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Chrome,
    Perfetto,
    Both,
}

pub async fn run(args: ConvertArgs) -> anyhow::Result<()> {
    let formats = match args.format {
        Format::Chrome => vec![TraceFormat::Chrome],
        Format::Perfetto => vec![TraceFormat::Perfetto],
        Format::Both => vec![TraceFormat::Chrome, TraceFormat::Perfetto],
    };
    let jobs = args.jobs.unwrap_or_else(tracesql::threads::cores);
    if jobs == 0 {
        bail!("-j 0: at least one window must be converted at a time");
    }
    let config = ConvertConfig {
        archive: args.archive,
        output: args.output,
        formats,
        jobs,
        force: args.force,
        max_size: (args.max_size.as_deref())
            .map(tracesql::export::split::parse_size)
            .transpose()?,
    };
    let found = convert::find(&config)?;
    for warning in &found.warnings {
        eprintln!("{warning}");
    }
    let mode = if args.quiet {
        ProgressMode::Quiet
    } else if std::io::stderr().is_terminal() {
        ProgressMode::Terminal
    } else {
        ProgressMode::Plain
    };
    let progress = Arc::new(Mutex::new(Progress::new(mode, found.windows.len())));
    let on_done = {
        let progress = progress.clone();
        Arc::new(move |report: &convert::WindowReport| {
            let mut progress = progress.lock().expect("progress is never poisoned");
            progress.done(report, &mut std::io::stderr().lock());
        })
    };
    #[cfg(feature = "cluster")]
    let summary = match &args.cluster {
        Some(endpoint) => {
            tracesql::cluster::convert::convert(endpoint, &config, found.windows, on_done).await?
        }
        None => convert::convert(&config, found.windows, interrupt_flag(), on_done).await?,
    };
    #[cfg(not(feature = "cluster"))]
    let summary = convert::convert(&config, found.windows, interrupt_flag(), on_done).await?;
    progress
        .lock()
        .expect("progress is never poisoned")
        .finish(&mut std::io::stderr().lock());

    let failed: Vec<_> = summary.failed().collect();
    for (window, reason) in &failed {
        eprintln!("failed: {}: {reason}", window.display());
    }
    eprintln!(
        "{} converted, {} up to date, {} failed{} -> {}",
        summary.converted(),
        summary.up_to_date(),
        failed.len(),
        if summary.cancelled {
            format!(", {} not done (interrupted)", summary.not_done)
        } else {
            String::new()
        },
        config.output.display()
    );
    if summary.cancelled {
        bail!("interrupted; run again to convert the rest (finished windows are skipped)");
    }
    if !failed.is_empty() {
        bail!(
            "{} of {} windows failed",
            failed.len(),
            summary.reports.len()
        );
    }
    Ok(())
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C kills at once. signal() is async-signal-safe.
    // SAFETY: restoring the default disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// A flag raised by the first Ctrl-C (SIGINT), which no longer kills the process: the
/// conversion drops its windows in flight (and their temporary files) and returns.
fn interrupt_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    // SAFETY: the handler only stores to an atomic and calls signal(), both
    // async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let watched = flag.clone();
    tokio::spawn(async move {
        while !INTERRUPTED.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        watched.store(true, Ordering::SeqCst);
    });
    flag
}
