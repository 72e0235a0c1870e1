//! Builds the simulation for a config (devices, streams, processes, threads, graphs, the Kineto
//! header), runs it and closes every file.

use std::path::Path;

use super::cpu_trace::{CpuProc, CpuTrace};
use super::graphs::build_graphs;
use super::rng::Rng;
use super::sim::{Dev, Proc, Sim, Thread};
use super::tables::Tables;
use super::{SynthConfig, SynthSummary};
use crate::schema::CPU_TRACE_FILE;
use crate::Result;

/// The first activity of window 0 (unix ns).
const T0: i64 = 1_759_300_079_000_000_000;

/// Generate the whole window into `dir` (the caller handles the temp dir and rename).
pub fn generate(cfg: &SynthConfig, dir: &Path) -> Result<SynthSummary> {
    let f = &cfg.features;
    let mut rng = Rng::new(cfg.seed);
    let ndev = cfg.devices.max(1) as usize;
    let nproc = cfg.processes.max(1) as usize;
    let t0 = T0
        + cfg.window_id.clamp(0, 1_000_000) * 60_000_000_000
        + rng.range(0, 999) * 1000
        + cfg.clock_offset_ns;

    let devs: Vec<Dev> = (0..ndev)
        .map(|d| {
            let off = 64 * (d / nproc) as i64;
            Dev {
                ctx: d as i64 + 1,
                streams: [7 + off, 13 + off, 21 + off],
                free: [t0; 3],
            }
        })
        .collect();
    let graphs = if f.graphs {
        build_graphs(&mut rng, f, ndev, nproc)
    } else {
        Vec::new()
    };
    let pid_base = 3_800 + rng.range(0, 60_000);
    let mut procs = Vec::with_capacity(nproc);
    for p in 0..nproc {
        let pid = pid_base + 97 * p as i64 + rng.range(0, 40);
        let mut raw = || 0x7f00_0000_0000u64 | (rng.below(0x00ff_ffff) << 12) | 0x640;
        let mut threads = vec![
            Thread {
                raw: raw(),
                os: pid,
                name: "python",
            },
            Thread {
                raw: raw(),
                os: pid + 31 + p as i64,
                name: "pt_autograd_0",
            },
        ];
        if p % 2 == 0 {
            threads.push(Thread {
                raw: raw(),
                os: pid + 88 + p as i64,
                name: "pt_nccl_watchdg",
            });
        }
        let mut pdevs: Vec<usize> = (0..ndev).filter(|d| d % nproc == p).collect();
        if pdevs.is_empty() {
            pdevs.push(p % ndev);
        }
        let pgraphs = (0..graphs.len())
            .filter(|&g| graphs[g].proc_ == p)
            .collect();
        procs.push(Proc {
            pid,
            threads,
            host_tid: pid + 7,
            devs: pdevs,
            graphs: pgraphs,
            seq: 0,
            plan: Vec::new(),
            pos: 0,
            iter: 0,
            iter_start: t0,
            region: None,
        });
    }

    let base_ns = (t0 - cfg.base_lead_ns).div_euclid(1000) * 1000;
    let cpu = if f.cpu_trace {
        let cp: Vec<CpuProc> = procs
            .iter()
            .map(|p| CpuProc {
                pid: p.pid,
                threads: p.threads.iter().map(|t| (t.os, t.name)).collect(),
            })
            .collect();
        let trace_id = format!("{:016X}", rng.next_u64());
        Some(CpuTrace::begin(
            &dir.join(CPU_TRACE_FILE),
            base_ns,
            t0,
            ndev as u32,
            &cp,
            &trace_id,
        )?)
    } else {
        None
    };

    let mut sim = Sim {
        f,
        rng,
        t: t0,
        corr: 0,
        ext: 0,
        last_gpu: t0,
        max_ts: t0,
        tb: Tables::new(dir, cfg.window_id, f),
        cpu,
        procs,
        devs,
        graphs,
        cur_proc: 0,
        cur_dev: 0,
        cur_ext: None,
        sync_id: 4660,
        event_ctr: 0,
        next_env: t0,
        next_pm: t0 + 20_000,
        next_ovh: t0 + 5_000,
        deps_ordinal: 0,
        py_id: 1,
    };
    sim.thread_resources();
    sim.run(cfg.events);
    let (last_ns, boundary) = sim.close();
    sim.window_info(cfg.window_id, t0, boundary, f.cpu_trace.then_some(base_ns));
    if let Some(cpu) = sim.cpu.take() {
        cpu.finish(t0, last_ns, &format!("synth_window_{}.json", cfg.window_id))?;
    }
    let total_events = sim.tb.activity_rows();
    let rows = sim.tb.finish()?;
    Ok(SynthSummary { rows, total_events })
}
