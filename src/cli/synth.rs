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
    for part in &args.without {
        let f = &mut config.features;
        let flag = match part.as_str() {
            "graphs" => &mut f.graphs,
            "graph_deps" => &mut f.graph_deps,
            "host_nodes" => &mut f.host_nodes,
            "event_nodes" => &mut f.event_nodes,
            "syncs" => &mut f.syncs,
            "annotations" => &mut f.annotations,
            "counters" => &mut f.counters,
            "lanes" => &mut f.lanes,
            "metadata" => &mut f.metadata,
            "driver" => &mut f.driver,
            "overhead" => &mut f.overhead,
            "cpu_trace" => &mut f.cpu_trace,
            other => anyhow::bail!("--without: unknown part `{other}` (see tracesql synth --help)"),
        };
        *flag = false;
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
