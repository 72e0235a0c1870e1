//! The simulated training loop: processes, threads, devices and streams, the per-iteration
//! plan (regions, CPU ops, graph replays, syncs) and the main generation loop.

use super::catalog::{
    OpDef, BACKWARD_OPS, COMPILED_OP, FORWARD_OPS, ITEM_OP, LOAD_OP, LOSS_OP, OPTIMIZER_OPS,
    ZERO_OP,
};
use super::cpu_trace::CpuTrace;
use super::graphs::Graph;
use super::rng::Rng;
use super::table::V;
use super::tables::Tables;
use super::SynthFeatures;

/// Stream slots of a device.
pub const COMPUTE: usize = 0;
pub const COMM: usize = 1;
pub const GRAPH: usize = 2;

pub struct Thread {
    /// Raw pthread-style id as CUPTI reports it.
    pub raw: u64,
    /// OS thread id (what Kineto uses as tid).
    pub os: i64,
    pub name: &'static str,
}

pub struct Region {
    pub ext: i64,
    pub name: &'static str,
    pub thread: usize,
    pub start: i64,
}

pub struct Proc {
    pub pid: i64,
    pub threads: Vec<Thread>,
    /// OS tid of the thread that runs graph host-node callbacks.
    pub host_tid: i64,
    pub devs: Vec<usize>,
    pub graphs: Vec<usize>,
    pub seq: i64,
    pub plan: Vec<Unit>,
    pub pos: usize,
    pub iter: u64,
    pub iter_start: i64,
    pub region: Option<Region>,
}

pub struct Dev {
    pub ctx: i64,
    pub streams: [i64; 3],
    /// When each stream's queued work finishes.
    pub free: [i64; 3],
}

#[derive(Clone, Copy)]
pub enum Unit {
    Begin(&'static str, usize),
    End,
    Op(&'static OpDef, usize),
    Replay(usize),
    EventPair,
    EventSync,
    DeviceSync,
    Watchdog,
    IterEnd,
}

pub struct Sim<'a> {
    pub f: &'a SynthFeatures,
    pub rng: Rng,
    /// The CPU cursor (unix ns).
    pub t: i64,
    pub corr: i64,
    pub ext: i64,
    /// Start of the latest GPU activity (GPU rows are written in start order).
    pub last_gpu: i64,
    /// Latest timestamp of any timed row.
    pub max_ts: i64,
    pub tb: Tables,
    pub cpu: Option<CpuTrace>,
    pub procs: Vec<Proc>,
    pub devs: Vec<Dev>,
    pub graphs: Vec<Graph>,
    /// Current process and device of the unit being run.
    pub cur_proc: usize,
    pub cur_dev: usize,
    /// (external_id, user_external_id) pushed while a CPU op or region runs API calls.
    pub cur_ext: Option<(i64, i64)>,
    pub sync_id: i64,
    pub event_ctr: i64,
    pub next_env: i64,
    pub next_pm: i64,
    pub next_ovh: i64,
    pub deps_ordinal: i32,
    pub py_id: i64,
}

impl Sim<'_> {
    pub fn thread_resources(&mut self) {
        for p in &self.procs {
            // The watchdog thread never pushes an annotation, so it has no mapping.
            for t in p.threads.iter().filter(|t| t.name != "pt_nccl_watchdg") {
                let opaque = t.raw as u32 as i32 as i64;
                self.tb
                    .thread_resource
                    .push(&[V::I(p.pid), V::I(opaque), V::I(t.os)]);
            }
        }
    }

    pub fn run(&mut self, target: u64) {
        let n = self.procs.len();
        let mut p = 0;
        loop {
            self.tick();
            let done_first = self
                .procs
                .iter()
                .all(|q| q.iter >= 2 || (q.iter == 1 && q.pos >= q.plan.len()));
            // +1: the trailing Activity Buffer Request written at close.
            if done_first && self.tb.activity_rows() + u64::from(self.f.overhead) >= target {
                break;
            }
            self.step(p);
            p = (p + 1) % n;
        }
    }

    fn step(&mut self, p: usize) {
        if self.procs[p].pos >= self.procs[p].plan.len() {
            self.plan(p);
        }
        let unit = self.procs[p].plan[self.procs[p].pos];
        self.procs[p].pos += 1;
        self.cur_proc = p;
        let proc_ = &self.procs[p];
        self.cur_dev = proc_.devs[(proc_.iter as usize + proc_.devs.len() - 1) % proc_.devs.len()];
        self.run_unit(unit);
    }

    /// The next iteration's units for process `p`.
    fn plan(&mut self, p: usize) {
        let nthreads = self.procs[p].threads.len();
        let iter = self.procs[p].iter;
        let mut u = Vec::with_capacity(64);
        let r = &mut self.rng;
        u.push(Unit::Begin("forward", 0));
        u.push(Unit::Op(&LOAD_OP, 0));
        u.push(Unit::Op(&ZERO_OP, 0));
        u.push(Unit::Op(&COMPILED_OP, 0));
        for _ in 0..r.range(7, 13) {
            u.push(Unit::Op(r.pick(FORWARD_OPS), 0));
        }
        u.push(Unit::Op(&LOSS_OP, 0));
        u.push(Unit::End);
        // Two micro-batches per iteration replay each captured graph.
        for _ in 0..2 {
            for &g in &self.procs[p].graphs {
                u.push(Unit::Begin("graph_replay", 0));
                u.push(Unit::Replay(g));
                u.push(Unit::End);
            }
        }
        u.push(Unit::Begin("backward", 1));
        for _ in 0..r.range(7, 13) {
            u.push(Unit::Op(r.pick(BACKWARD_OPS), 1));
        }
        u.push(Unit::End);
        u.push(Unit::EventPair);
        u.push(Unit::Begin("optimizer.step", 0));
        for op in OPTIMIZER_OPS {
            u.push(Unit::Op(op, 0));
        }
        u.push(Unit::End);
        if iter.is_multiple_of(4) {
            u.push(Unit::EventSync);
        }
        u.push(Unit::Op(&ITEM_OP, 0));
        if iter.is_multiple_of(8) {
            u.push(Unit::DeviceSync);
        }
        if nthreads >= 3 {
            u.push(Unit::Watchdog);
        }
        u.push(Unit::IterEnd);
        let proc_ = &mut self.procs[p];
        proc_.plan = u;
        proc_.pos = 0;
        proc_.iter += 1;
        proc_.iter_start = self.t;
    }

    fn run_unit(&mut self, unit: Unit) {
        let p = self.cur_proc;
        match unit {
            Unit::Begin(name, th) => {
                let ext = self.next_ext();
                if self.f.annotations {
                    self.tb.user_annotation.push(&[V::I(ext), V::S(name)]);
                }
                self.procs[p].region = Some(Region {
                    ext,
                    name,
                    thread: th,
                    start: self.t,
                });
                self.t += self.rng.range(800, 3_000);
            }
            Unit::End => {
                self.t += self.rng.range(400, 2_000);
                self.close_region(p);
            }
            Unit::Op(op, th) => self.cpu_op(op, th),
            Unit::Replay(g) => {
                let ext = self.procs[p].region.as_ref().map(|r| r.ext).unwrap_or(0);
                self.cur_ext = Some((ext, ext));
                self.replay(g);
                self.cur_ext = None;
            }
            Unit::EventPair => self.event_pair(),
            Unit::EventSync => self.event_sync(),
            Unit::DeviceSync => self.device_sync(),
            Unit::Watchdog => self.watchdog(),
            Unit::IterEnd => self.iter_end(p),
        }
    }

    pub fn close_region(&mut self, p: usize) {
        if let Some(r) = self.procs[p].region.take() {
            let (pid, tid) = (self.procs[p].pid, self.procs[p].threads[r.thread].os);
            if let Some(cpu) = self.cpu.as_mut() {
                cpu.user_annotation(r.name, pid, tid, r.start, self.t, r.ext);
            }
        }
    }

    pub fn iter_end(&mut self, p: usize) {
        let (pid, tid, s) = (
            self.procs[p].pid,
            self.procs[p].threads[0].os,
            self.procs[p].iter_start,
        );
        // the profiler's step annotation around the iteration, as Kineto records it
        let step =
            (self.f.steps && self.f.annotations && self.cpu.is_some()).then(|| self.next_ext());
        let number = self.procs[p].iter;
        if let Some(cpu) = self.cpu.as_mut() {
            cpu.python_function("train.py(87): train_step", pid, tid, s, self.t, self.py_id);
            if let Some(ext) = step {
                let name = format!("ProfilerStep#{number}");
                cpu.user_annotation(&name, pid, tid, s, self.t, ext);
            }
        }
        self.py_id += 1;
    }

    pub fn next_ext(&mut self) -> i64 {
        self.ext += 1;
        self.ext
    }

    pub fn next_corr(&mut self) -> i64 {
        self.corr += 1;
        self.corr
    }

    /// One Kineto cpu_op: its external id is pushed while its launches run.
    fn cpu_op(&mut self, op: &'static OpDef, th: usize) {
        let p = self.cur_proc;
        let ext = self.next_ext();
        let uext = match (&self.procs[p].region, self.f.annotations) {
            (Some(r), true) => r.ext,
            _ => ext,
        };
        let start = self.t;
        self.t += self.rng.range(2_000, 6_000);
        self.cur_ext = Some((ext, uext));
        for step in op.steps {
            if self.rng.chance(60) {
                self.noise(th);
            }
            self.launch(*step, th);
            self.t += self.rng.range(900, 4_000);
        }
        self.cur_ext = None;
        if self.rng.chance(15) {
            // A pushed id CUPTI reported with no API record (correlation 0).
            self.tb.ext.push(&[V::I(4), V::I(ext), V::I(0), V::I(uext)]);
        }
        let proc_ = &mut self.procs[p];
        proc_.seq += 1;
        let (pid, tid, seq) = (proc_.pid, proc_.threads[th].os, proc_.seq);
        if let Some(cpu) = self.cpu.as_mut() {
            cpu.cpu_op(op.name, pid, tid, start, self.t, ext, seq);
        }
    }
}
