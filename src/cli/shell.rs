//! `tracesql shell`: an interactive SQL session over a window or archive.

use std::path::PathBuf;

use clap::Args;
use tracesql::shell::{history_path, ShellConfig};

use super::Reported;

/// An interactive SQL shell over a window or archive: line editing, history, tab completion
/// of keywords, tables, views and columns. A statement runs once it ends with `;`; Ctrl-C
/// cancels the running one, Ctrl-D or .quit leaves. `.help` lists the dot-commands
/// (.tables, .schema, .mode, .maxrows, .maxwidth, .timer, .read, .output, .open, .export,
/// .doctor).
///
/// Not on a terminal, it runs the statements and dot-commands of standard input in order and
/// stops at the first error (exit status 1) unless --keep-going.
///
/// Examples:
///   tracesql shell --window runs/window_id=000042
///   tracesql shell -w runs/ < report.sql
///   printf '.mode csv\nselect count(*) from kernel;\n' | tracesql shell -w W
///
/// History is kept in $TRACESQL_HISTORY, else $XDG_DATA_HOME/tracesql/history
/// (~/.local/share/tracesql/history); TRACESQL_HISTORY= keeps none.
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ShellArgs {
    /// A window directory or an archive of window_id=N folders (default: the built-in demo)
    #[arg(short, long, value_name = "PATH")]
    window: Option<PathBuf>,
    /// Reading standard input: run the rest after an error (the exit status is still 1)
    #[arg(long)]
    keep_going: bool,
}

pub async fn run(args: ShellArgs) -> anyhow::Result<()> {
    let window = super::window_or_demo(args.window.as_deref())?;
    let outcome = tracesql::shell::run(ShellConfig {
        window,
        keep_going: args.keep_going,
        history: history_path(),
    })
    .await?;
    match outcome.errors {
        0 => Ok(()),
        _ => Err(Reported(if outcome.internal { 2 } else { 1 }).into()),
    }
}
