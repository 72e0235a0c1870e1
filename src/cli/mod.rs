//! Command-line wiring: clap types, converted to library calls at the boundary. No logic of
//! its own beyond choosing inputs and outputs.

#[cfg(feature = "cluster")]
mod cluster;
mod convert;
mod diff;
mod doctor;
mod export;
mod import;
mod interrupt;
mod query;
mod report;
mod shell;
mod synth;
mod tables;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use datafusion::prelude::SessionContext;
use tracesql::window::Window;

/// SQL over CUPTI GPU trace windows.
#[derive(Parser)]
#[command(name = "tracesql", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print each stage's wall and CPU time and the memory in use, on stderr
    #[arg(long, global = true, env = "TRACESQL_PROFILE")]
    profile: bool,
    /// Print EXPLAIN ANALYZE of the export plan PLAN (e.g. chrome_kernel, or
    /// critical_path_segment under --critical-path), of the query of a report step's table
    /// (e.g. _cp_path__critical_path_summary), or of a diff view (e.g. _diff_gpu_work), as
    /// it runs
    #[arg(long, global = true, value_name = "PLAN", env = "TRACESQL_EXPLAIN")]
    explain: Option<String>,
    /// Export plans encoded at once (default: one per core; 1 gives stage profiles that add up)
    #[arg(long, global = true, value_name = "N", env = "TRACESQL_EXPORT_JOBS")]
    plan_jobs: Option<usize>,
}

#[derive(Subcommand)]
enum Command {
    Query(query::QueryArgs),
    Report(report::ReportArgs),
    Diff(diff::DiffArgs),
    Export(export::ExportArgs),
    Convert(convert::ConvertArgs),
    Tables(tables::TablesArgs),
    Synth(synth::SynthArgs),
    Import(import::ImportArgs),
    Shell(shell::ShellArgs),
    Doctor(doctor::DoctorArgs),
    #[cfg(feature = "cluster")]
    Cluster(cluster::ClusterArgs),
}

/// Run the command line `args` (the program name first) and return its exit status; never
/// panics on bad input. `--help`, `--version` and a malformed command line exit the process
/// (clap's way).
pub fn run(args: impl IntoIterator<Item = std::ffi::OsString>) -> u8 {
    let cli = Cli::parse_from(args);
    tracesql::profile::configure(tracesql::profile::Diagnostics {
        stages: cli.profile,
        explain: cli.explain.clone(),
        plan_jobs: cli.plan_jobs,
    });
    // The commands that export hold large row sets: their freed buffers leave the resident set.
    if matches!(
        cli.command,
        Command::Export(_) | Command::Convert(_) | Command::Shell(_)
    ) {
        tracesql::memory::map_large_allocations();
    }
    // The shell cancels a statement and goes on; convert finishes its windows in flight; a
    // cluster server stops on its own signals. Every other command ends at Ctrl-C.
    let own_ctrl_c = matches!(cli.command, Command::Shell(_) | Command::Convert(_));
    #[cfg(feature = "cluster")]
    let own_ctrl_c = own_ctrl_c || matches!(cli.command, Command::Cluster(_));
    if !own_ctrl_c {
        interrupt::exit_on_ctrl_c();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return 2;
        }
    };
    let result = runtime.block_on(dispatch(cli.command));
    match result {
        Ok(()) => 0,
        Err(e) => exit_for(&e),
    }
}

/// Run the command line `args` (the program name first) in the caller's runtime, as a library
/// call: no Ctrl-C handling, no exit, no diagnostics switched on; a malformed command line and
/// a failure are returned, not printed (the Python package's export and import).
pub async fn run_in_process(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(args).map_err(|e| {
        let first = e.to_string().lines().next().unwrap_or_default().to_string();
        tracesql::Error::Usage(first.trim_start_matches("error: ").to_string())
    })?;
    dispatch_in_process(cli.command).await
}

async fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Shell(args) => shell::run(args).await,
        other => dispatch_in_process(other).await,
    }
}

/// Every command but the shell, whose terminal keeps its future on one thread.
async fn dispatch_in_process(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Query(args) => query::run(args).await,
        Command::Report(args) => report::run(args).await,
        Command::Diff(args) => diff::run(args).await,
        Command::Export(args) => export::run(args).await,
        Command::Convert(args) => convert::run(args).await,
        Command::Tables(args) => tables::run(args).await,
        Command::Synth(args) => synth::run(args),
        Command::Import(args) => import::run(args).await,
        Command::Shell(_) => Err(tracesql::Error::Usage(
            "the shell reads a terminal: run `tracesql shell` in one".into(),
        )
        .into()),
        Command::Doctor(args) => doctor::run(args).await,
        #[cfg(feature = "cluster")]
        Command::Cluster(args) => cluster::run(args).await,
    }
}

fn exit_for(e: &anyhow::Error) -> u8 {
    if let Some(Reported(code)) = e.downcast_ref::<Reported>() {
        return *code;
    }
    let broken_pipe = e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    });
    if broken_pipe {
        return 0;
    }
    let line = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("error: {line}");
    match e.downcast_ref::<tracesql::Error>() {
        Some(err) if !err.is_user_error() => 2,
        _ => 1,
    }
}

/// The exit status of a command that printed its outcome itself (the shell's errors as they
/// happened, the doctor's findings): nothing more is printed.
#[derive(Debug)]
pub struct Reported(pub u8);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the command reported its outcome (exit status {})",
            self.0
        )
    }
}

impl std::error::Error for Reported {}

/// `--window PATH`, or the built-in demo window (saying so on stderr).
pub fn window_or_demo(window: Option<&Path>) -> anyhow::Result<PathBuf> {
    Ok(match window {
        Some(p) => p.to_path_buf(),
        None => {
            let demo = tracesql::demo::demo_window()?;
            eprintln!(
                "using the built-in demo window ({}); pass --window DIR for your own",
                demo.display()
            );
            demo
        }
    })
}

/// Open `--window PATH` (or the built-in demo window, saying so on stderr) and register it.
pub async fn open_catalog(window: Option<&Path>) -> anyhow::Result<(Window, SessionContext)> {
    let path = window_or_demo(window)?;
    let window = Window::open(&path)?;
    for warning in &window.warnings {
        eprintln!("{warning}");
    }
    let ctx = tracesql::catalog::open(&window).await?;
    Ok((window, ctx))
}

/// [`open_catalog`], in a session whose queries run on the cluster at `endpoint`.
#[cfg(feature = "cluster")]
pub async fn open_cluster_catalog(
    endpoint: &tracesql::cluster::Endpoint,
    window: Option<&Path>,
) -> anyhow::Result<(Window, SessionContext)> {
    let path = window_or_demo(window)?;
    let window = Window::open(&path)?;
    for warning in &window.warnings {
        eprintln!("{warning}");
    }
    let ctx = tracesql::cluster::open(endpoint, &window).await?;
    Ok((window, ctx))
}
