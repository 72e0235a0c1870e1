//! `tracesql report`: run one of the documented analyses of sql/reports/.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use tracesql::report::Report;
use tracesql::sink::OutputFormat;

/// Run a documented analysis (sql/reports/NAME.sql) over a window or an archive.
///
/// Over an archive, every report has one group per window, its partition columns first
/// (e.g. rank, window_id). Times are ns, shares percent. `--list` names the reports and their
/// parameters; `tracesql report all --format html -o report.html` writes every report, with
/// plots, into one self-contained page. Several reports (names, or `all`) run in one
/// session: to the terminal as tables, or with `--format F -o DIR` one file each
/// (DIR/NAME.F).
///
/// Examples:
///   tracesql report --list
///   tracesql report kernel_summary --window runs/step12
///   tracesql report gpu_gaps -w runs/ --param min_gap_ns=50000 --format csv
///   tracesql report temporal_breakdown -w ranks/ -o breakdown.parquet
///   tracesql report temporal_breakdown idle_breakdown -w ranks/ --format csv -o out/
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// The reports' names (see --list), or `all`
    #[arg(required_unless_present = "list", value_name = "NAME")]
    names: Vec<String>,
    /// List the reports: name, what it computes, parameters with their defaults
    #[arg(long)]
    list: bool,
    /// A window directory or an archive of window_id=N folders (default: the built-in demo)
    #[arg(short, long, value_name = "PATH")]
    window: Option<PathBuf>,
    /// Set a report parameter (repeatable), e.g. --param min_gap_ns=50000
    #[arg(short, long = "param", value_name = "KEY=VALUE", value_parser = parse_param)]
    params: Vec<(String, String)>,
    /// Output format: table, csv, json, ndjson, parquet, html (default: from --output's extension, else table)
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Width the table may take on stdout (default: the terminal's; values are cut with `…`)
    #[arg(long, value_name = "N")]
    max_width: Option<usize>,
    /// Write the result to FILE (atomically) instead of stdout; with several reports, a
    /// folder that gets one file per report
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Run on the Ballista cluster whose scheduler is at df://HOST:PORT (see tracesql cluster)
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<tracesql::cluster::Endpoint>,
}

pub(super) fn parse_param(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))
}

/// `--format`, else the output's extension; `html` is the report page, not a query format.
enum Format {
    Rows(OutputFormat),
    Html,
}

pub async fn run(args: ReportArgs) -> anyhow::Result<()> {
    if args.list {
        print_list();
        return Ok(());
    }
    let format = match (&args.format, &args.output) {
        (Some(f), _) if f == "html" => Format::Html,
        (Some(f), _) => Format::Rows(f.parse::<OutputFormat>()?),
        (None, Some(p)) if p.extension().is_some_and(|e| e == "html") => Format::Html,
        (None, Some(p)) => Format::Rows(super::query::format_from_extension(p)),
        (None, None) => Format::Rows(OutputFormat::Table),
    };
    let mut reports = Vec::new();
    for name in &args.names {
        match name.as_str() {
            "all" => reports.extend(tracesql::report::reports()),
            name => reports.push(tracesql::report::find(name)?),
        }
    }
    if reports.len() > 1 && !args.params.is_empty() {
        bail!("--param applies to one report; run `tracesql report NAME --param ...`");
    }
    #[cfg(feature = "cluster")]
    let (window, ctx) = match &args.cluster {
        Some(endpoint) => super::open_cluster_catalog(endpoint, args.window.as_deref()).await?,
        None => super::open_catalog(args.window.as_deref()).await?,
    };
    #[cfg(not(feature = "cluster"))]
    let (window, ctx) = super::open_catalog(args.window.as_deref()).await?;
    let partitions = window.partition_keys.clone();
    // A cluster runs each query's plan apart: helpers held here would not reach it.
    #[cfg(feature = "cluster")]
    let hold_shared = args.cluster.is_none();
    #[cfg(not(feature = "cluster"))]
    let hold_shared = true;
    tracesql::report::register_helpers_for(&ctx, &partitions, &reports, hold_shared).await?;
    let inputs = [window.root.as_path()];
    match format {
        Format::Html => write_html(&args, &reports, &ctx, &partitions, &window).await,
        Format::Rows(format) if reports.len() == 1 => {
            let sql = reports[0].sql(&partitions, &args.params)?;
            let output = args.output.as_deref();
            super::query::write_result(&ctx, &sql, format, output, args.max_width, &inputs).await
        }
        Format::Rows(OutputFormat::Table) if args.output.is_none() => {
            for report in &reports {
                println!("\n{}: {}", report.name, report.title);
                let sql = report.sql(&partitions, &[])?;
                super::query::write_result(
                    &ctx,
                    &sql,
                    OutputFormat::Table,
                    None,
                    args.max_width,
                    &inputs,
                )
                .await
                .with_context(|| format!("report {}", report.name))?;
            }
            Ok(())
        }
        Format::Rows(format) => match (&args.output, &args.format) {
            (Some(dir), Some(_)) => {
                write_each(&ctx, &reports, &partitions, format, dir, &inputs).await
            }
            _ => bail!(
                "several reports go to the terminal as tables, into an HTML page \
                 (--format html -o report.html), or one file each (--format csv -o DIR)"
            ),
        },
    }
}

/// Each report into `dir/NAME.EXT` (the folder made if absent), one after another.
async fn write_each(
    ctx: &datafusion::prelude::SessionContext,
    reports: &[Report],
    partitions: &[String],
    format: OutputFormat,
    dir: &std::path::Path,
    inputs: &[&std::path::Path],
) -> anyhow::Result<()> {
    tracesql::file::refuse_writing_into(dir, inputs, "--output")?;
    if dir.is_file() {
        bail!(
            "{}: is a file; several reports are written into a folder",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let extension = match format {
        OutputFormat::Table | OutputFormat::Line => "txt".to_string(),
        other => format!("{other:?}").to_ascii_lowercase(),
    };
    let mut jobs = Vec::with_capacity(reports.len());
    for report in reports {
        let path = dir.join(format!("{}.{extension}", report.name));
        jobs.push((report.name, report.sql(partitions, &[])?, path));
    }
    let inputs: Vec<PathBuf> = inputs.iter().map(|p| p.to_path_buf()).collect();
    on_every_core(jobs, |(name, sql, path)| {
        let (ctx, inputs) = (ctx.clone(), inputs.clone());
        async move {
            let inputs: Vec<&std::path::Path> = inputs.iter().map(PathBuf::as_path).collect();
            super::query::write_result(&ctx, &sql, format, Some(&path), None, &inputs)
                .await
                .with_context(|| format!("report {name}"))
        }
    })
    .await?;
    eprintln!("wrote {} reports into {}", reports.len(), dir.display());
    Ok(())
}

/// `job` of every item, each on its own task, two per core at once; the results in order.
/// A small report's time is mostly planning, which takes one core per query, and a report
/// waiting for a held helper another is computing takes none: with one per core, the five HTA
/// reports over HTA's 15 k-op test trace took 57.5 ms, with two 54 ms.
async fn on_every_core<I, T, F, Fut>(items: Vec<I>, job: F) -> anyhow::Result<Vec<T>>
where
    F: Fn(I) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>> + Send + 'static,
    T: Send + 'static,
{
    use futures::StreamExt;
    let cores = crate::threads::cores();
    let tasks = items.into_iter().map(|item| tokio::spawn(job(item)));
    let results: Vec<_> = futures::stream::iter(tasks)
        .buffered(2 * cores)
        .collect()
        .await;
    results
        .into_iter()
        .map(|joined| joined.context("a report's task failed")?)
        .collect()
}

fn print_list() {
    for report in tracesql::report::reports() {
        println!("{:<22} {}", report.name, report.title);
        for p in &report.params {
            println!("{:<22}   --param {}={}  {}", "", p.name, p.default, p.doc);
        }
    }
}

async fn write_html(
    args: &ReportArgs,
    reports: &[Report],
    ctx: &datafusion::prelude::SessionContext,
    partitions: &[String],
    window: &tracesql::window::Window,
) -> anyhow::Result<()> {
    let Some(path) = args.output.as_deref() else {
        bail!("an HTML report is a file: pass --output report.html");
    };
    tracesql::file::refuse_writing_into(path, &[window.root.as_path()], "--output")?;
    let values = if reports.len() == 1 {
        args.params.clone()
    } else {
        Vec::new()
    };
    let outputs = on_every_core(reports.to_vec(), |report| {
        let (ctx, partitions, values) = (ctx.clone(), partitions.to_vec(), values.clone());
        async move {
            report
                .collect(&ctx, &partitions, &values)
                .await
                .with_context(|| format!("report {}", report.name))
        }
    })
    .await?;
    let page = tracesql::report::html::render(&outputs, &window.root.display().to_string());
    let mut file = tracesql::file::AtomicFile::create(path)?;
    let mut out = file.writer();
    std::io::Write::write_all(&mut out, page.as_bytes())
        .and_then(|()| std::io::Write::flush(&mut out))
        .map_err(|e| tracesql::Error::Write(e).at_output(path))?;
    drop(out);
    file.commit()?;
    eprintln!("wrote {} ({} reports)", path.display(), outputs.len());
    Ok(())
}
