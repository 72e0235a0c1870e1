//! `tracesql diff`: two runs compared step by step, the change of step time split by cause.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tracesql::window::Window;

/// Compare two runs (windows or archives): why NEW's steps took longer or shorter than
/// BASE's, cause by cause, with the step-to-step noise told apart.
///
/// Steps are the CPU spans named like --step-name (ProfilerStep#N by default), paired in
/// order; within a step, GPU work pairs by the CPU op that launched it, the normalized kernel
/// name and its place (the k-th launch with the k-th). Ranks of two archives pair by their
/// partition folders (rank=0 with rank=0; --pair picks the columns). Times are ns;
/// `delta_ns` is NEW minus BASE.
///
///   --by summary   one row per rank: step time over the paired steps, the change by cause
///   --by step      each paired step: the change by cause; the parts add up to delta_ns
///   --by kernel    per normalized kernel name (also: op, annotation, stream), most changed
///                  first; annotation: the innermost user annotation (record_function, NVTX
///                  range) open around the launching call
///   --by gpu-op    every kernel, copy and set, paired ('paired', 'added', 'removed')
///
/// A change is flagged when the Mann-Whitney test across the steps says it is larger than
/// the noise (p below --alpha); with one step per run nothing can be. --sql runs your own
/// query over the diff's views (diff_step, diff_summary, diff_by, diff_gpu_op) and tables,
/// which hold both runs with a `run` column ('base', 'new'); base.kernel and new.kernel are
/// each run's own.
///
/// Examples:
///   tracesql diff before/ after/
///   tracesql diff before.pt.trace.json.gz after.pt.trace.json.gz    (Kineto traces as they are)
///   tracesql diff before/ after/ --by kernel --steps 2-9
///   tracesql diff ranks_a/ ranks_b/ --by op --format csv -o ops.csv
///   tracesql diff day1/ day2/ --pair rank        (rank=N with rank=N; host folders aside)
///   tracesql diff before/ after/ -o diff.html    (a page: waterfall, steps, top changes)
///   tracesql diff before/ after/ --timeline step.pftrace   (both runs' step, for Perfetto)
///   tracesql diff a/ b/ --sql "select run, count(*) from kernel group by run"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct DiffArgs {
    /// The run to compare against: a window directory, an archive, or a Kineto trace
    /// (.json, .json.gz; imported on the way)
    #[arg(value_name = "BASE")]
    base: PathBuf,
    /// The run to explain (as BASE)
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// What each row is (see above)
    #[arg(long, value_enum, default_value = "step")]
    by: By,
    /// The CPU spans that are steps: a SQL LIKE pattern over their names
    #[arg(long, value_name = "PATTERN", default_value = "ProfilerStep#%")]
    step_name: String,
    /// The partition columns that pair ranks of two archives, e.g. `rank` (other columns,
    /// such as a host that differs between the runs, take no part) or `rank=gpu` (BASE's
    /// rank with NEW's gpu). Default: every partition column, by the same name
    #[arg(long, value_name = "KEY[=NEW_KEY]", value_delimiter = ',')]
    pair: Vec<String>,
    /// Which paired steps count, numbered from 1: e.g. 3, 2-9, 1,3,5-7 (default: all)
    #[arg(long, value_name = "STEPS")]
    steps: Option<String>,
    /// Flag a change when the noise test's p-value is below this
    #[arg(long, value_name = "P", default_value_t = 0.05)]
    alpha: f64,
    /// Run this SQL over the diff's views and tables instead
    #[arg(long, value_name = "SQL", conflicts_with = "by")]
    sql: Option<String>,
    /// Output format: table, csv, json, ndjson, parquet, or html: one page of every view with
    /// its plots (default: from --output's extension, .html included, else table)
    #[arg(long, value_name = "FORMAT")]
    format: Option<String>,
    /// Width the table may take on stdout (default: the terminal's; values are cut with `…`)
    #[arg(long, value_name = "N")]
    max_width: Option<usize>,
    /// Write the result to FILE (atomically) instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write one trace (.pftrace, else Chrome JSON, .json.gz) with a typical step of
    /// BASE above the same step of NEW, aligned at the step's start, changed kernels renamed
    /// `[+23% +12.0 µs] name` (or `[added]`, `[removed]`); --steps 7 picks step 7
    #[arg(long, value_name = "TRACE")]
    timeline: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum By {
    Summary,
    Step,
    Kernel,
    Op,
    Annotation,
    Stream,
    GpuOp,
}

impl By {
    fn name(self) -> &'static str {
        match self {
            By::Summary => "summary",
            By::Step => "step",
            By::Kernel => "kernel",
            By::Op => "op",
            By::Annotation => "annotation",
            By::Stream => "stream",
            By::GpuOp => "gpu-op",
        }
    }
}

/// `--format html`: the page of every view with its plots, to `--output`.
async fn write_html(args: &DiffArgs, diff: &tracesql::diff::Diff) -> anyhow::Result<()> {
    let Some(path) = args.output.as_deref() else {
        anyhow::bail!("an HTML diff is a file: pass --output diff.html");
    };
    if args.sql.is_some() {
        anyhow::bail!(
            "--format html shows the diff's own views: drop --sql, or pick another format"
        );
    }
    let inputs = [args.base.as_path(), args.new.as_path()];
    tracesql::file::refuse_writing_into(path, &inputs, "--output")?;
    let page = tracesql::diff::html(
        diff,
        &args.base.display().to_string(),
        &args.new.display().to_string(),
    )
    .await?;
    tracesql::file::write_atomically(path, |out| {
        std::io::Write::write_all(out, page.as_bytes()).map_err(|e| tracesql::Error::io(path, e))
    })?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// `--timeline`: a step of both runs, one above the other, in one trace at `path`.
async fn write_timeline(
    args: &DiffArgs,
    diff: &tracesql::diff::Diff,
    base: &Window,
    new: &Window,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    let inputs = [args.base.as_path(), args.new.as_path()];
    tracesql::file::refuse_writing_into(path, &inputs, "--timeline")?;
    let pftrace =
        path.to_string_lossy()
            .contains(".pftrace")
            .then(|| tracesql::export::PftraceConfig {
                compression_level: 1,
                ..Default::default()
            });
    let written = tracesql::diff::write_timeline(diff, base, new, path, pftrace.as_ref()).await?;
    eprintln!(
        "wrote {}: step {} of each run, one above the other ({} windows, {} events, {} \
         kernels marked as changed)",
        path.display(),
        written.step,
        written.summary.windows.len(),
        written.summary.events,
        written.marked
    );
    Ok(())
}

/// A run: a window or archive as it is, or a Kineto trace (.json, .json.gz) imported into
/// the folder `scratch` first.
fn open_run(path: &std::path::Path, scratch: &std::path::Path) -> anyhow::Result<Window> {
    if !path.is_file() {
        return Ok(Window::open(path)?);
    }
    let config = tracesql::import::ImportConfig {
        inputs: vec![path.to_path_buf()],
        output: scratch.to_path_buf(),
    };
    tracesql::import::import_kineto(&config, |_| {})?;
    Ok(Window::open(scratch)?)
}

pub async fn run(args: DiffArgs) -> anyhow::Result<()> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(tracesql::Error::Usage(format!(
            "--alpha {}: expected a p-value between 0 and 1",
            args.alpha
        ))
        .into());
    }
    // Kineto traces are imported first, both at once, into folders gone at the end
    let scratch = tempfile::tempdir()?;
    let (base, new) = std::thread::scope(|s| {
        let base = s.spawn(|| open_run(&args.base, &scratch.path().join("base")));
        let new = open_run(&args.new, &scratch.path().join("new"));
        (base.join().expect("the import of BASE panicked"), new)
    });
    let (base, new) = (base?, new?);
    for warning in base.warnings.iter().chain(&new.warnings) {
        eprintln!("warning: {warning}");
    }
    let options = tracesql::diff::Options {
        step_name: args.step_name.clone(),
        steps: args.steps.clone(),
        alpha: args.alpha,
        pair: args
            .pair
            .iter()
            .map(|p| match p.split_once('=') {
                Some((b, n)) => (b.trim().to_string(), n.trim().to_string()),
                None => (p.trim().to_string(), p.trim().to_string()),
            })
            .collect(),
    };
    let diff = tracesql::diff::open(&base, &new, &options).await?;
    if let Some(path) = &args.timeline {
        write_timeline(&args, &diff, &base, &new, path).await?;
    }
    let html_output = args
        .output
        .as_ref()
        .is_some_and(|p| p.extension().is_some_and(|e| e == "html"));
    if args.format.as_deref() == Some("html") || (args.format.is_none() && html_output) {
        return write_html(&args, &diff).await;
    }
    let sql = match &args.sql {
        Some(sql) => sql.clone(),
        None => tracesql::diff::view_sql(args.by.name(), &diff.keys),
    };
    let format = match (&args.format, &args.output) {
        (Some(f), _) => f.parse()?,
        (None, Some(p)) => super::query::format_from_extension(p),
        (None, None) => tracesql::sink::OutputFormat::Table,
    };
    let inputs = [args.base.as_path(), args.new.as_path()];
    super::query::write_result(
        &diff.ctx,
        &sql,
        format,
        args.output.as_deref(),
        args.max_width,
        &inputs,
    )
    .await
}
