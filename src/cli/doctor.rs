//! `tracesql doctor`: the data-quality checks of `sql/doctor/` over a window or archive.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use tracesql::sink::{Fit, OutputFormat, ResultWriter};

/// Check a window (or every window of an archive) for data-quality problems: GPU ops with no
/// launching call, launches with no GPU op, ops outside the window, overlaps on a stream,
/// zero or negative durations, unknown cbids, external ids with no CPU operator, a missing or
/// unbased CPU trace, CPU and GPU clocks far apart, duplicate correlation ids.
///
/// Prints each check with its severity, its count and one example row (partition columns
/// first over an archive). Exit status 0 when no error-level check fires, 1 otherwise.
/// Each check is a view of the offending rows: `tracesql shell` then `.doctor`, then
/// `select * from stream_overlap` lists them all. docs/doctor.md says what to do about each.
///
/// Examples:
///   tracesql doctor --window runs/window_id=000042
///   tracesql doctor -w runs/ --format json | jq '.[] | select(.count > 0)'
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct DoctorArgs {
    /// A window directory or an archive of window_id=N folders (default: the built-in demo)
    #[arg(short, long, value_name = "PATH")]
    window: Option<PathBuf>,
    /// table (for people) or json (a list of {check, severity, count, total, example, summary})
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Width the table may take on stdout (default: the terminal's; values are cut with `…`)
    #[arg(long, value_name = "N")]
    max_width: Option<usize>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
}

pub async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let (window, ctx) = super::open_catalog(args.window.as_deref()).await?;
    let findings = tracesql::doctor::run(&ctx, &window.partition_keys).await?;
    let stdout = std::io::stdout();
    let on_terminal = stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout);
    match args.format {
        Format::Json => out.write_all(tracesql::doctor::report::json(&findings)?.as_bytes())?,
        Format::Table => {
            let batch = tracesql::doctor::report::table(&findings)?;
            let max_width = match args.max_width {
                Some(n) => Some(n),
                None if on_terminal => tracesql::sink::table::terminal_width(),
                None => None,
            };
            let fit = Fit {
                max_width,
                max_rows: None,
            };
            let mut writer =
                ResultWriter::try_new_fitted(&mut out, batch.schema(), OutputFormat::Table, fit)?;
            writer.write(&batch)?;
            writer.finish()?;
        }
    }
    out.flush()?;
    eprintln!("{}", tracesql::doctor::report::summary_line(&findings));
    if tracesql::doctor::has_errors(&findings) {
        return Err(super::Reported(1).into());
    }
    Ok(())
}
