//! `tracesql export`: a window as a Chrome trace (JSON, gzipped for `.gz`) or a Perfetto
//! protobuf trace (`.pftrace`, gzipped).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use tracesql::export::{
    export_chrome, export_chrome_split, export_merged_chrome, export_merged_chrome_split,
    export_merged_pftrace, export_merged_pftrace_split, export_pftrace, export_pftrace_split,
    split, Align, ExportConfig, MergeConfig, PftraceConfig, RowFilter,
};

/// Export a window as a Chrome trace JSON file or a Perfetto protobuf trace (open either in
/// Perfetto UI), equal in content to the reference exporter's: GPU ops, API calls, flows,
/// syncs, counters and the CPU trace.
///
/// Examples:
///   tracesql export --window runs/window_id=000042 --output trace.json.gz
///   tracesql export --window runs/window_id=000042 --output trace.pftrace
///   tracesql export --window W --output nccl.json.gz --where "name like '%nccl%'"
///   tracesql export --window W --output s7.pftrace --sql keep_stream_7.sql
///   tracesql export --window W --output path.json.gz --critical-path
///
/// --where keeps the GPU ops and API calls for which the predicate holds (and the calls that
/// launched a kept op); --sql runs a script that may redefine tables first, e.g.
///   CREATE OR REPLACE VIEW kernel AS SELECT * FROM kernel WHERE stream_id = 7;
/// See docs/export-filter.md.
///
/// --critical-path draws each ProfilerStep's critical path over the trace (as the
/// critical_path report finds it, on the whole window): a "Critical path" track of its
/// segments and arrows through the ops it runs along. See docs/reports.md.
///
/// An archive (e.g. rank=R/window_id=N/ folders) is exported as one merged trace: every
/// window's processes and GPU lanes named after its partition (`rank 3 · python`), their ids
/// kept apart, flows within their window, times on the first window's clock (--align);
/// --where conjuncts over partition columns pick windows ("rank in (0,1) AND ..."), the
/// others narrow each window. The shifts applied are printed and recorded in the trace's
/// `tracesqlMerge` member.
///   tracesql export --window runs/dlrm --output merged.json.gz --align collectives
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ExportArgs {
    /// The window directory (with its cpu_trace.json.gz), or an archive to merge
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
    /// Draw each step's critical path (the critical_path report): a "Critical path" track
    /// with the path's segments, flagged `critical` with their cause, and arrows where the
    /// path moves between threads and streams
    #[arg(long)]
    critical_path: bool,
    /// A parameter of the critical path (repeatable; see `tracesql report --list`), e.g.
    /// --param 'annotation=Step %' or --param 'speedup=%gemm%=0.5'
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = super::report::parse_param,
        requires = "critical_path")]
    params: Vec<(String, String)>,
    /// Merged exports: how the windows' clocks are aligned. wall: as recorded; collectives:
    /// each window shifted by the median offset that makes its NCCL kernels (matched per
    /// process group, else per name, in order) end when the first window's do; FILE: offsets
    /// in ns per partition, lines `rank=1 -1500` (units ns, us, ms, s allowed; # comments)
    /// or a JSON object {"rank=1": -1500}
    #[arg(long, value_name = "wall|collectives|FILE", default_value = "wall")]
    align: String,
    /// Split the trace into parts of at most SIZE each, of uncompressed JSON or .pftrace
    /// (500MB, 1.5GB): NAME.part001.json.gz (.pftrace), ... each a complete trace covering a
    /// time range, and NAME.parts.json listing them; a flow (.pftrace: a launch or wait
    /// link) whose ends fall in different parts is left out
    #[arg(long, value_name = "SIZE")]
    max_size: Option<String>,
}

pub async fn run(args: ExportArgs) -> anyhow::Result<()> {
    let pftrace = match args.format.as_deref() {
        None => args.output.to_string_lossy().contains(".pftrace"),
        Some("chrome") => false,
        Some("pftrace") => true,
        Some(other) => bail!("unknown export format `{other}` (expected chrome or pftrace)"),
    };
    let started = Instant::now();
    let budget = args
        .max_size
        .as_deref()
        .map(split::parse_size)
        .transpose()?;
    let output = args.output.clone();
    let written = export(args, pftrace, budget, started).await?;
    if let Some(s) = &written.parts {
        for p in &s.parts {
            eprintln!(
                "{}: {} events from {:.3} µs to {:.3} µs, {} bytes",
                p.file.display(),
                p.events,
                p.start_us,
                p.last_us,
                p.bytes
            );
        }
        eprintln!(
            "split into {} parts of at most {} bytes ({} flows across parts left out, {} events); listed in {} ({:.2} s)",
            s.parts.len(),
            budget.unwrap_or_default(),
            s.cut_flows,
            s.cut_flow_events,
            s.index.display(),
            started.elapsed().as_secs_f64()
        );
    } else if !pftrace {
        if let Some(bytes) = written.bytes.filter(|b| *b > HINT_BYTES) {
            eprintln!(
                "hint: {} holds {:.1} GB of JSON, more than Perfetto UI loads well; \
                 --max-size 500MB splits it into parts",
                output.display(),
                bytes as f64 / 1e9
            );
        }
    }
    Ok(())
}

/// Exports above this many bytes of JSON get a hint to split them.
const HINT_BYTES: u64 = 1_000_000_000;

/// Bytes of the document written (uncompressed), where known, and its parts when split.
struct Written {
    bytes: Option<u64>,
    parts: Option<split::SplitSummary>,
}

async fn export(
    args: ExportArgs,
    pftrace: bool,
    budget: Option<u64>,
    started: Instant,
) -> anyhow::Result<Written> {
    let filter = RowFilter {
        predicate: args.predicate.clone(),
        script: args.script.clone(),
        critical_path: args.critical_path.then(|| args.params.clone()),
    };
    // one window's .pftrace settings (a merged .pftrace exports each window with them)
    let single = PftraceConfig {
        window: args.window.clone(),
        output: args.output.clone(),
        compression_level: args.compression_level,
        arch: args.arch,
        process_id: args.process_id,
        process_name: args.process_name,
        filter: filter.clone(),
    };
    let archive = tracesql::window::find_windows(&args.window)
        .is_ok_and(|found| !found.partition_keys.is_empty());
    if archive {
        let merge = MergeConfig {
            archive: args.window.clone(),
            output: args.output.clone(),
            trace_name: args.trace_name,
            filter: filter.clone(),
            align: Align::parse(&args.align),
        };
        let mut parts = None;
        let summary = match pftrace {
            true => match budget {
                Some(max_bytes) => {
                    let (summary, split) =
                        export_merged_pftrace_split(&merge, &single, max_bytes).await?;
                    parts = Some(split);
                    summary
                }
                None => export_merged_pftrace(&merge, &single).await?,
            },
            false => match budget {
                Some(max_bytes) => {
                    let (summary, split) = export_merged_chrome_split(&merge, max_bytes).await?;
                    parts = Some(split);
                    summary
                }
                None => export_merged_chrome(&merge).await?,
            },
        };
        for w in &summary.windows {
            let matched = match w.matched {
                Some(n) => format!(" ({n} collectives)"),
                None => String::new(),
            };
            eprintln!(
                "{}: offset {} ns{matched}, shift {} ns, {} {}",
                w.partition,
                w.offset_ns,
                w.shift_ns,
                w.events,
                if pftrace { "packets" } else { "events" }
            );
        }
        eprintln!(
            "wrote {} {} of {} windows to {} in {:.2} s",
            summary.events,
            if pftrace { "packets" } else { "events" },
            summary.windows.len(),
            args.output.display(),
            started.elapsed().as_secs_f64()
        );
        return Ok(Written {
            bytes: summary.bytes,
            parts,
        });
    }
    if args.align != "wall" {
        bail!(
            "--align applies to an archive's merged export; {} is one window",
            args.window.display()
        );
    }
    let mut parts = None;
    let summary = if pftrace {
        match budget {
            Some(max_bytes) => {
                let (summary, split) = export_pftrace_split(&single, max_bytes).await?;
                parts = Some(split);
                summary
            }
            None => export_pftrace(&single).await?,
        }
    } else {
        let config = ExportConfig {
            window: args.window,
            output: args.output.clone(),
            trace_name: args.trace_name,
            filter,
        };
        match budget {
            Some(max_bytes) => {
                let (summary, split) = export_chrome_split(&config, max_bytes).await?;
                parts = Some(split);
                summary
            }
            None => export_chrome(&config).await?,
        }
    };
    eprintln!(
        "wrote {} {} to {} in {:.2} s",
        summary.events,
        if pftrace { "packets" } else { "events" },
        args.output.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(Written {
        bytes: summary.bytes,
        parts,
    })
}
