//! `tracesql query`: run SQL against a window or archive.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use tracesql::sink::OutputFormat;

/// Run SQL against a window (or every window of an archive).
///
/// Tables: one per CUPTI kind (kernel, gpu_memcpy, cuda_runtime, ...), the side tables,
/// cpu_event, cpu_trace, cbid, and the views api_call, gpu_op, launch, cpu_launch, graph_edge,
/// gpu_op_clamped. `tracesql tables --schema` lists them with their columns.
///
/// Example:
///   tracesql query "select name, count(*), sum(end_ns - start_ns) as total_ns
///                   from kernel group by name order by 3 desc limit 10"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct QueryArgs {
    /// SQL text (one or more statements; the last one's result is printed)
    sql: Option<String>,
    /// Read the SQL from FILE instead
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "sql"
    )]
    file: Option<PathBuf>,
    /// A window directory or an archive of window_id=N folders (default: the built-in demo)
    #[arg(short, long, value_name = "PATH")]
    window: Option<PathBuf>,
    /// Output format: table, csv, json, ndjson, parquet, line (default: from --output's extension, else table)
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Width the table may take on stdout (default: the terminal's; values are cut with `…`)
    #[arg(long, value_name = "N")]
    max_width: Option<usize>,
    /// Write the result to FILE (atomically) instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Run on the Ballista cluster whose scheduler is at df://HOST:PORT (see tracesql cluster)
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<tracesql::cluster::Endpoint>,
}

pub async fn run(args: QueryArgs) -> anyhow::Result<()> {
    let sql = match (&args.sql, &args.file) {
        (Some(sql), None) => sql.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?,
        _ => bail!("give the SQL as an argument or with -f FILE (see tracesql query --help)"),
    };
    let format = match (&args.format, &args.output) {
        (Some(name), _) => name.parse::<OutputFormat>()?,
        (None, Some(path)) => format_from_extension(path),
        (None, None) => OutputFormat::Table,
    };
    #[cfg(feature = "cluster")]
    let (window, ctx) = match &args.cluster {
        Some(endpoint) => super::open_cluster_catalog(endpoint, args.window.as_deref()).await?,
        None => super::open_catalog(args.window.as_deref()).await?,
    };
    #[cfg(not(feature = "cluster"))]
    let (window, ctx) = super::open_catalog(args.window.as_deref()).await?;
    let mut inputs = vec![window.root.as_path()];
    inputs.extend(args.file.as_deref());
    let output = args.output.as_deref();
    write_result(&ctx, &sql, format, output, args.max_width, &inputs).await
}

/// Run `sql` and write its result in `format`: to `output` atomically (refused when it lies
/// in one of `inputs`), else to stdout, where a terminal's table shares its width.
pub(super) async fn write_result(
    ctx: &datafusion::prelude::SessionContext,
    sql: &str,
    format: OutputFormat,
    output: Option<&std::path::Path>,
    max_width: Option<usize>,
    inputs: &[&std::path::Path],
) -> anyhow::Result<()> {
    match output {
        Some(path) => {
            tracesql::file::refuse_writing_into(path, inputs, "--output")?;
            // The file appears only once the whole result is written.
            let mut file = tracesql::file::AtomicFile::create(path)?;
            let mut out = tracesql::file::WatchedWriter::new(file.writer());
            let written = tracesql::query::write_query(ctx, sql, format, &mut out).await;
            if let Some(failed) = out.error_at(path) {
                return Err(failed.into());
            }
            written.map_err(|e| e.at_output(path))?;
            drop(out);
            file.commit()?;
        }
        None => {
            let stdout = std::io::stdout();
            if format.is_binary() && stdout.is_terminal() {
                bail!("parquet output is binary: pass --output FILE or redirect stdout");
            }
            // On a terminal the table shares its width; piped, every value is whole.
            let max_width = match max_width {
                Some(n) => Some(n),
                None if stdout.is_terminal() => tracesql::sink::table::terminal_width(),
                None => None,
            };
            let fit = tracesql::sink::Fit {
                max_width,
                max_rows: None,
            };
            tracesql::query::write_query_fitted(
                ctx,
                sql,
                format,
                fit,
                std::io::BufWriter::new(QuietPipe(stdout)),
            )
            .await?;
        }
    }
    Ok(())
}

pub(super) fn format_from_extension(path: &std::path::Path) -> OutputFormat {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => OutputFormat::Csv,
        Some("json") => OutputFormat::Json,
        Some("ndjson") | Some("jsonl") => OutputFormat::Ndjson,
        Some("parquet") => OutputFormat::Parquet,
        _ => OutputFormat::Table,
    }
}

/// Stdout that ends the process quietly (exit 0) once the reader has gone away, as after
/// `| head`: some encoders turn the broken pipe into an error of their own.
struct QuietPipe(std::io::Stdout);

impl std::io::Write for QuietPipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        quiet_on_broken_pipe(self.0.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        quiet_on_broken_pipe(self.0.flush())
    }
}

fn quiet_on_broken_pipe<T>(result: std::io::Result<T>) -> std::io::Result<T> {
    match result {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => other,
    }
}
