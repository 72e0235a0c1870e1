//! `tracesql import kineto`: PyTorch profiler traces as windows.

use std::path::PathBuf;

use clap::{Args, Subcommand};
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

pub fn run(args: ImportArgs) -> anyhow::Result<()> {
    let Source::Kineto(args) = args.source;
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
