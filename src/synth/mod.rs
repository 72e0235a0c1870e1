//! Synthetic windows: writes a realistic, deterministic CUPTI window (Parquet per kind, side
//! tables, Kineto `cpu_trace.json.gz`) for tests, benches and the demo.
//!
//! ```text
//! SynthConfig -> sim (a training loop: iterations of regions, ops, launches, graph replays,
//!                syncs; periodic counters and overhead) -> tables (chunked Parquet writers)
//!                                                       -> cpu_trace (streamed Kineto JSON)
//! ```
//! Everything comes from one SplitMix64 stream, so a config always gives the same bytes.

mod catalog;
mod cpu_trace;
mod generate;
mod gpu;
mod graphs;
mod periodic;
mod rng;
mod sim;
mod syncs;
mod tables;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use crate::window::writer as table;
use crate::{Error, Result};

/// What to generate.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    /// Target number of activity rows over all kinds (within a few percent).
    pub events: u64,
    pub seed: u64,
    pub window_id: i64,
    /// GPUs (one context each); default 2.
    pub devices: u32,
    /// Processes (pids), each with 2-3 threads; default 2.
    pub processes: u32,
    pub features: SynthFeatures,
    /// Added to every timestamp (and the CPU trace's base): the same window as recorded by
    /// a clock this far off, ns (a multiple of 1000 keeps the CPU trace's times exact).
    pub clock_offset_ns: i64,
    /// How long before the first activity the CPU trace's base time lies, ns; default 5 s.
    /// Far (10^16 ns and more), the reference's µs floats no longer hold every ns.
    pub base_lead_ns: i64,
}

/// Optional parts of a window; `all()` turns every one on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthFeatures {
    /// CUDA-graph replays (graphed kernel/memcpy/memset rows).
    pub graphs: bool,
    /// The graph_deps side table.
    pub graph_deps: bool,
    /// graph_host_node rows.
    pub host_nodes: bool,
    /// graph_event_node rows and the graph_event_record side table.
    pub event_nodes: bool,
    /// cuda_sync and cuda_event rows.
    pub syncs: bool,
    /// The user_annotation side table and region ids in user_external_id.
    pub annotations: bool,
    /// environment and pm_sampling rows.
    pub counters: bool,
    /// logical_lane / lane_name columns on GPU kinds.
    pub lanes: bool,
    /// The kernel `metadata` column (collective descriptors on NCCL kernels).
    pub metadata: bool,
    /// Some launches through the driver API (cuLaunchKernel / cuLaunchKernelEx).
    pub driver: bool,
    /// overhead rows (with the trailing "Activity Buffer Request").
    pub overhead: bool,
    /// cpu_trace.json.gz.
    pub cpu_trace: bool,
    /// A `ProfilerStep#N` annotation around each iteration in the CPU trace, as
    /// torch.profiler records steps (with annotations and the CPU trace). Off unless asked
    /// for (`tracesql synth --steps`): the golden windows predate it.
    pub steps: bool,
}

impl SynthFeatures {
    pub fn all() -> Self {
        SynthFeatures {
            graphs: true,
            graph_deps: true,
            host_nodes: true,
            event_nodes: true,
            syncs: true,
            annotations: true,
            counters: true,
            lanes: true,
            metadata: true,
            driver: true,
            overhead: true,
            cpu_trace: true,
            steps: false,
        }
    }

    /// Turn off the part named as `tracesql synth --without` names it; false for no such part.
    pub fn leave_out(&mut self, part: &str) -> bool {
        let flag = match part {
            "graphs" => &mut self.graphs,
            "graph_deps" => &mut self.graph_deps,
            "host_nodes" => &mut self.host_nodes,
            "event_nodes" => &mut self.event_nodes,
            "syncs" => &mut self.syncs,
            "annotations" => &mut self.annotations,
            "counters" => &mut self.counters,
            "lanes" => &mut self.lanes,
            "metadata" => &mut self.metadata,
            "driver" => &mut self.driver,
            "overhead" => &mut self.overhead,
            "cpu_trace" => &mut self.cpu_trace,
            _ => return false,
        };
        *flag = false;
        true
    }

    pub fn none() -> Self {
        SynthFeatures {
            graphs: false,
            graph_deps: false,
            host_nodes: false,
            event_nodes: false,
            syncs: false,
            annotations: false,
            counters: false,
            lanes: false,
            metadata: false,
            driver: false,
            overhead: false,
            cpu_trace: false,
            steps: false,
        }
    }
}

impl SynthConfig {
    /// Every feature on, window 1, 2 devices, 2 processes.
    pub fn new(events: u64, seed: u64) -> Self {
        SynthConfig {
            events,
            seed,
            window_id: 1,
            devices: 2,
            processes: 2,
            features: SynthFeatures::all(),
            clock_offset_ns: 0,
            base_lead_ns: 5_000_000_000,
        }
    }
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthSummary {
    /// Rows per table that got a file (activity kinds first, then side tables).
    pub rows: Vec<(&'static str, u64)>,
    /// Activity rows over all kinds.
    pub total_events: u64,
}

fn tmp_path(out_dir: &Path) -> PathBuf {
    let mut s: OsString = out_dir.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Write one synthetic window into `out_dir` (created; refused when it exists and is not
/// empty). Files are written under `<out_dir>.tmp` and renamed into place when complete.
pub fn write_window(cfg: &SynthConfig, out_dir: &Path) -> Result<SynthSummary> {
    if out_dir.exists() {
        let mut entries = fs::read_dir(out_dir).map_err(|e| Error::io(out_dir, e))?;
        if entries.next().is_some() {
            return Err(Error::Usage(format!(
                "{}: already exists and is not empty (windows are immutable)",
                out_dir.display()
            )));
        }
    }
    let tmp = tmp_path(out_dir);
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let make = || fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e));
    let ((), listed) = crate::file::Unfinished::make(make, |_| tmp.clone())?;
    let summary = match generate::generate(cfg, &tmp) {
        Ok(s) => s,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if out_dir.exists() {
        fs::remove_dir(out_dir).map_err(|e| Error::io(out_dir, e))?;
    }
    (listed.finish(|| fs::rename(&tmp, out_dir))).map_err(|e| Error::io(out_dir, e))?;
    Ok(summary)
}
