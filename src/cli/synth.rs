//! `tracesql synth`: write a synthetic window.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use tracesql::synth::{write_window, SynthConfig};

/// Write a realistic synthetic window (kernels, copies, API calls, CUDA graphs, syncs,
/// counters, a Kineto CPU trace) for tests, benchmarks and demos.
///
/// Example:
///   tracesql synth --out /tmp/w --events 1000000 --seed 7
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct SynthArgs {
    /// The window directory to create (must not exist or be empty)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Activity rows to generate, over all kinds
    #[arg(long, default_value_t = 10_000)]
    events: u64,
    /// Seed: the same seed and size give byte-identical files
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// window_id recorded in window_info and file metadata
    #[arg(long, default_value_t = 1)]
    window_id: i64,
    /// Leave parts out (comma-separated): graphs, graph_deps, host_nodes, event_nodes,
    /// syncs, annotations, counters, lanes, metadata, driver, overhead, cpu_trace
    #[arg(long, value_name = "PARTS", value_delimiter = ',')]
    without: Vec<String>,
    /// Wrap each iteration in a ProfilerStep#N annotation of the CPU trace, as
    /// torch.profiler records steps (for the critical path reports)
    #[arg(long)]
    steps: bool,
    /// Shift every timestamp by this many ns (the same window seen by an offset clock)
    #[arg(
        long,
        value_name = "NS",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    clock_offset_ns: i64,
    /// Put the CPU trace's base time this many ns before the first activity
    #[arg(long, value_name = "NS", default_value_t = 5_000_000_000)]
    base_lead_ns: i64,
}

pub fn run(args: SynthArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut config = SynthConfig::new(args.events, args.seed);
    config.window_id = args.window_id;
    config.clock_offset_ns = args.clock_offset_ns;
    config.base_lead_ns = args.base_lead_ns;
    config.features.steps = args.steps;
    for part in &args.without {
        if !config.features.leave_out(part) {
            anyhow::bail!("--without: unknown part `{part}` (see tracesql synth --help)");
        }
    }
    let summary = write_window(&config, &args.out)?;
    eprintln!(
        "wrote {} events to {} in {:.2} s",
        summary.total_events,
        args.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
