//! `tracesql import kineto|nsys`: PyTorch profiler traces and Nsight Systems reports as
//! windows.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use tracesql::import::nsys::{import_nsys, NsysConfig, NsysWindow};
use tracesql::import::{import_kineto, ImportConfig, WindowReport};

/// Import traces of other profilers as windows.
#[derive(Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    source: Source,
}

#[derive(Subcommand)]
enum Source {
    Kineto(KinetoArgs),
    Nsys(NsysArgs),
}

/// Import PyTorch profiler (Kineto) traces: one window per trace. Several traces make an
/// archive partitioned by rank (distributedInfo.rank, else the position on the command line).
///
/// Example:
///   tracesql import kineto trace.json.gz --output runs/step12
///   tracesql import kineto worker*.pt.trace.json.gz --output runs/dlrm
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct KinetoArgs {
    /// Kineto trace files (.json or .json.gz)
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// The window (one trace) or archive (several) to create; must not exist
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
}

/// Import Nsight Systems reports (`nsys export --type sqlite`, or a `--type parquetdir`
/// folder): one window per (report, process that did GPU work). Several windows make an
/// archive: DIR/report=NAME/process=PID/window_id=NNNNNN/.
///
/// Example:
///   nsys export --type sqlite -o run.sqlite run.nsys-rep
///   tracesql import nsys run.sqlite --output runs/run
///   tracesql query -w runs/run "select count(*) from kernel"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct NsysArgs {
    /// Reports: .sqlite files or parquetdir folders
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// The window (one GPU process) or archive (more) to create; must not exist
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
}

pub async fn run(args: ImportArgs) -> anyhow::Result<()> {
    let args = match args.source {
        Source::Kineto(args) => args,
        Source::Nsys(args) => return run_nsys(args).await,
    };
    let config = ImportConfig {
        inputs: args.traces,
        output: args.output,
    };
    let reports = import_kineto(&config, progress)?;
    if reports.len() > 1 {
        eprintln!(
            "wrote {} windows to {}",
            reports.len(),
            config.output.display()
        );
    }
    Ok(())
}

fn progress(r: &WindowReport) {
    let s = &r.stats;
    let mb = r.json_bytes as f64 / 1e6;
    eprintln!(
        "{} -> {}: {} kernels, {} memcpys, {} memsets, {} API calls, {} syncs, {} CPU events \
         ({mb:.1} MB of JSON in {:.2} s, {:.0} MB/s)",
        r.input.display(),
        r.window.display(),
        s.kernels,
        s.memcpys,
        s.memsets,
        s.api_calls(),
        s.syncs,
        s.cpu_events,
        r.seconds,
        mb / r.seconds.max(1e-9),
    );
    if let Some(line) = s.unmapped_line() {
        eprintln!("warning: {}: {line}", r.input.display());
    }
}

async fn run_nsys(args: NsysArgs) -> anyhow::Result<()> {
    let config = NsysConfig {
        inputs: args.reports,
        output: args.output,
    };
    let windows = import_nsys(&config, nsys_progress).await?;
    if windows.len() > 1 {
        eprintln!(
            "wrote {} windows to {}",
            windows.len(),
            config.output.display()
        );
    }
    Ok(())
}

fn nsys_progress(w: &NsysWindow) {
    for warning in &w.warnings {
        eprintln!("warning: {}: {warning}", w.input.display());
    }
    let s = &w.stats;
    eprintln!(
        "{} pid {} -> {}: {} kernels, {} memcpys, {} memsets, {} API calls, {} syncs, \
         {} NVTX ranges ({:.2} s)",
        w.input.display(),
        w.pid,
        w.window.display(),
        s.kernels,
        s.memcpys,
        s.memsets,
        s.runtime_calls + s.driver_calls,
        s.syncs,
        s.nvtx_ranges,
        w.seconds,
    );
}
