//! `tracesql export`: a window as a Chrome trace (JSON, gzipped for `.gz`) or a Perfetto
//! protobuf trace (`.pftrace`, gzipped).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use tracesql::export::{export_chrome, export_pftrace, ExportConfig, PftraceConfig, RowFilter};

/// Export a window as a Chrome trace JSON file or a Perfetto protobuf trace (open either in
/// Perfetto UI), equal in content to the reference exporter's: GPU ops, API calls, flows,
/// syncs, counters and the CPU trace.
///
/// Examples:
///   tracesql export --window runs/window_id=000042 --output trace.json.gz
///   tracesql export --window runs/window_id=000042 --output trace.pftrace
///   tracesql export --window W --output nccl.json.gz --where "name like '%nccl%'"
///   tracesql export --window W --output s7.pftrace --sql keep_stream_7.sql
///
/// --where keeps the GPU ops and API calls for which the predicate holds (and the calls that
/// launched a kept op); --sql runs a script that may redefine tables first, e.g.
///   CREATE OR REPLACE VIEW kernel AS SELECT * FROM kernel WHERE stream_id = 7;
/// See docs/export-filter.md.
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The window directory (with its cpu_trace.json.gz)
    #[arg(short, long, value_name = "DIR")]
    window: PathBuf,
    /// The trace file to write (atomically): .pftrace for Perfetto protobuf, else Chrome
    /// JSON (gzipped when it ends in .gz)
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// traceName of a Chrome trace (default: the output path)
    #[arg(long, value_name = "NAME")]
    trace_name: Option<String>,
    /// Output format: chrome or pftrace (default from the extension)
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// gzip level of a .pftrace, 0-9
    #[arg(long, value_name = "N", default_value_t = 1)]
    compression_level: u32,
    /// .pftrace "arch" of the GPU (sm_XY; default from the CPU trace's deviceProperties)
    #[arg(long, value_name = "sm_XY")]
    arch: Option<String>,
    /// .pftrace "process_id" (default: the traced process)
    #[arg(long, value_name = "N")]
    process_id: Option<i64>,
    /// .pftrace "process_name" (default: the traced process's name, else python)
    #[arg(long, value_name = "NAME")]
    process_name: Option<String>,
    /// Keep only the GPU ops and API calls for which this SQL predicate holds; columns:
    /// kind, name, start_ns, end_ns, ts, dur, device_id, stream_id, correlation_id, graph_id,
    /// graph_node_id, process_id, thread_id
    #[arg(long = "where", value_name = "PREDICATE")]
    predicate: Option<String>,
    /// A SQL script run before export; it may redefine tables, e.g.
    /// `CREATE OR REPLACE VIEW kernel AS SELECT * FROM kernel WHERE stream_id = 7;`
    #[arg(long = "sql", value_name = "FILE")]
    script: Option<PathBuf>,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<()> {
    let pftrace = match args.format.as_deref() {
        None => args.output.to_string_lossy().contains(".pftrace"),
        Some("chrome") => false,
        Some("pftrace") => true,
        Some(other) => bail!("unknown export format `{other}` (expected chrome or pftrace)"),
    };
    let filter = RowFilter {
        predicate: args.predicate,
        script: args.script,
    };
    let started = Instant::now();
    let summary = if pftrace {
        export_pftrace(&PftraceConfig {
            window: args.window,
            output: args.output.clone(),
            compression_level: args.compression_level,
            arch: args.arch,
            process_id: args.process_id,
            process_name: args.process_name,
            filter,
        })
        .await?
    } else {
        export_chrome(&ExportConfig {
            window: args.window,
            output: args.output.clone(),
            trace_name: args.trace_name,
            filter,
        })
        .await?
    };
    eprintln!(
        "wrote {} {} to {} in {:.2} s",
        summary.events,
        if pftrace { "packets" } else { "events" },
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
