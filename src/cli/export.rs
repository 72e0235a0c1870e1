//! `tracesql export`: a window as a Chrome trace (JSON, gzipped for `.gz`).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use tracesql::export::{export_chrome, ExportConfig};

/// Export a window as a Chrome trace JSON file (open it in Perfetto UI), equal to the
/// reference exporter's: GPU ops, API calls, flows, syncs, counters and the CPU trace.
///
/// Example:
///   tracesql export --window runs/window_id=000042 --output trace.json.gz
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The window directory (with its cpu_trace.json.gz)
    #[arg(short, long, value_name = "DIR")]
    window: PathBuf,
    /// The trace file to write (atomically); gzipped when it ends in .gz
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// traceName of the trace (default: the output path)
    #[arg(long, value_name = "NAME")]
    trace_name: Option<String>,
    /// Output format (only `chrome`; default from the extension)
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<()> {
    match args.format.as_deref() {
        None | Some("chrome") => {}
        Some(other) => bail!("unknown export format `{other}` (expected chrome)"),
    }
    let started = Instant::now();
    let summary = export_chrome(&ExportConfig {
        window: args.window,
        output: args.output.clone(),
        trace_name: args.trace_name,
    })
    .await?;
    eprintln!(
        "wrote {} events to {} in {:.2} s",
        summary.events,
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
