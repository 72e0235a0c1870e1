//! API records and the GPU work they launch: runtime/driver rows, external correlation,
//! eager kernel/memcpy/memset rows.

use super::catalog::{drv, rt, KClass, Step, KERNELS, NOISE_RT};
use super::sim::{Sim, COMM, COMPUTE};
use super::table::V;

/// Which API table a record goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Runtime,
    Driver,
}

/// A GPU row's common columns.
pub struct GpuRow<'a> {
    pub start: i64,
    pub end: i64,
    pub dev: usize,
    pub slot: usize,
    pub corr: i64,
    pub gnid: i64,
    pub annotation: Option<&'a str>,
    /// (logical lane ordinal, name) for resolver-assigned graphed rows.
    pub lane: Option<(i64, &'a str)>,
}

fn opt(s: Option<&str>) -> V<'_> {
    s.map_or(V::N, V::S)
}

impl Sim<'_> {
    /// One API record on thread `th` of the current process; returns (correlation, start, end).
    /// Adds the external-correlation row when an external id is pushed.
    pub fn api(&mut self, api: Api, cbid: i64, th: usize, dur: i64) -> (i64, i64, i64) {
        let corr = self.next_corr();
        let (s, e) = (self.t, self.t + dur);
        let p = &self.procs[self.cur_proc];
        let row = [
            V::I(cbid),
            V::I(s),
            V::I(e),
            V::I(p.pid),
            V::U(p.threads[th].raw),
            V::I(corr),
            V::N, // name: left out (every cbid is in the table)
        ];
        match api {
            Api::Runtime => self.tb.runtime.push(&row),
            Api::Driver => self.tb.driver.push(&row),
        }
        if let Some((ext, uext)) = self.cur_ext {
            self.tb
                .ext
                .push(&[V::I(4), V::I(ext), V::I(corr), V::I(uext)]);
        }
        self.t = e;
        self.max_ts = self.max_ts.max(e);
        (corr, s, e)
    }

    /// A runtime call that launches nothing (filtered or kept by the exporter, never a flow).
    pub fn noise(&mut self, th: usize) {
        let cbid = *self.rng.pick(NOISE_RT);
        let dur = self.rng.range(150, 1_200);
        self.api(Api::Runtime, cbid, th, dur);
        self.t += self.rng.range(200, 900);
    }

    /// Start time of a GPU op that could start at `ready` on `slot` (None: no stream order).
    /// GPU rows are written in start order, so starts never go backwards.
    pub fn gpu_start(&mut self, ready: i64, slot: Option<usize>) -> i64 {
        let mut s = ready.max(self.last_gpu + self.rng.range(80, 700));
        if let Some(slot) = slot {
            s = s.max(self.devs[self.cur_dev].free[slot] + self.rng.range(500, 2_500));
        }
        self.last_gpu = s;
        s
    }

    fn finish_gpu(&mut self, slot: usize, end: i64) {
        let d = &mut self.devs[self.cur_dev];
        d.free[slot] = d.free[slot].max(end);
        self.max_ts = self.max_ts.max(end);
    }

    fn lane_cells<'a>(&self, r: &GpuRow<'a>) -> [V<'a>; 2] {
        match r.lane {
            Some((ord, name)) => [V::I(100_000 + ord), V::S(name)],
            None => [V::I(self.devs[r.dev].streams[r.slot]), V::N],
        }
    }

    fn common<'a>(&self, r: &GpuRow<'a>) -> [V<'a>; 9] {
        let d = &self.devs[r.dev];
        [
            V::I(r.start),
            V::I(r.end),
            V::I(r.dev as i64),
            V::I(d.ctx),
            V::I(d.streams[r.slot]),
            V::I(r.corr),
            V::I(r.gnid),
            V::I(r.gnid >> 32),
            opt(r.annotation),
        ]
    }

    pub fn kernel_dur(&mut self, k: usize) -> i64 {
        let (lo, hi) = KERNELS[k].class.dur_ns();
        let u = self.rng.unit();
        lo + ((hi - lo) as f64 * u * u) as i64
    }

    /// A kernel row (eager or graphed).
    pub fn kernel_row(&mut self, r: &GpuRow<'_>, k: usize, queued: i64) {
        let kd = &KERNELS[k];
        let c = self.common(r);
        let lanes = self.lane_cells(r);
        let scale = match kd.class {
            KClass::Elem | KClass::Triton => 1 << self.rng.below(4),
            _ => 1,
        };
        let channel = 3 + r.slot as i64 + 8 * (r.dev as i64 % 2);
        let prio = if r.slot == COMM { -2 } else { 0 };
        let meta = kd.meta.map_or(V::N, V::S);
        // kernel stores `name` between graph_id and annotation (schema.rs order).
        self.tb.kernel.push(
            &[
                &c[..8],
                &[
                    V::S(kd.name),
                    c[8],
                    V::I(kd.grid[0] * scale),
                    V::I(kd.grid[1]),
                    V::I(kd.grid[2]),
                    V::I(kd.block[0]),
                    V::I(kd.block[1]),
                    V::I(kd.block[2]),
                    V::I(kd.regs),
                    V::I(kd.smem.0),
                    V::I(kd.smem.1),
                    V::I(prio),
                    V::I(queued),
                    V::I(channel),
                    V::I(1),
                    meta,
                    lanes[0],
                    lanes[1],
                ],
            ]
            .concat(),
        );
    }

    /// A memcpy row; `kind` 1 HtoD, 2 DtoH, 8 DtoD.
    pub fn memcpy_row(&mut self, r: &GpuRow<'_>, kind: i64, bytes: i64) {
        let (src, dst) = match kind {
            1 => (1, 3),
            2 => (3, 2),
            _ => (3, 3),
        };
        let c = self.common(r);
        let lanes = self.lane_cells(r);
        let channel = 9 + (kind == 2) as i64;
        // The nine shared GPU columns, then this kind's own (schema.rs order).
        self.tb.memcpy.push(
            &[
                &c[..],
                &[
                    V::I(bytes),
                    V::I(kind),
                    V::I(src),
                    V::I(dst),
                    V::I(1),
                    V::I(channel),
                    V::I(2),
                    V::N,
                    lanes[0],
                    lanes[1],
                    V::N,
                    V::N,
                ],
            ]
            .concat(),
        );
    }

    pub fn memset_row(&mut self, r: &GpuRow<'_>, bytes: i64) {
        let c = self.common(r);
        let lanes = self.lane_cells(r);
        // The nine shared GPU columns, then this kind's own (schema.rs order).
        self.tb.memset.push(
            &[
                &c[..],
                &[
                    V::I(bytes),
                    V::I(0),
                    V::I(3),
                    V::I(1),
                    V::I(9),
                    V::I(2),
                    V::N,
                    lanes[0],
                    lanes[1],
                ],
            ]
            .concat(),
        );
    }

    /// Bytes and duration of a copy of `kind`.
    pub fn copy_shape(&mut self, kind: i64) -> (i64, i64) {
        match kind {
            1 => {
                let b = 1 << self.rng.range(16, 23);
                (b, b / 12 + 2_000)
            }
            2 => (4 << self.rng.below(3), self.rng.range(1_500, 3_000)),
            _ => {
                let b = 1 << self.rng.range(14, 25);
                (b, b / 1_200 + 1_500)
            }
        }
    }

    /// One eager launch step of a CPU op.
    pub fn launch(&mut self, step: Step, th: usize) {
        let dev = self.cur_dev;
        let (api, cbid, slot) = match step {
            Step::K(k) if KERNELS[k as usize].class == KClass::Attn => {
                (Api::Runtime, rt::LAUNCH_KERNEL_EX_C, COMPUTE)
            }
            Step::K(_) => (Api::Runtime, rt::LAUNCH_KERNEL, COMPUTE),
            Step::Tri(_) if self.f.driver => {
                if self.rng.chance(150) {
                    let d = self.rng.range(300, 900);
                    self.api(Api::Driver, drv::POINTER_GET_ATTRIBUTE, th, d);
                }
                let cbid = if self.rng.chance(300) {
                    drv::LAUNCH_KERNEL_EX
                } else {
                    drv::LAUNCH_KERNEL
                };
                (Api::Driver, cbid, COMPUTE)
            }
            Step::Tri(_) => (Api::Runtime, rt::LAUNCH_KERNEL, COMPUTE),
            Step::Nccl(_) => (Api::Runtime, rt::LAUNCH_KERNEL, COMM),
            Step::H2D | Step::D2H | Step::D2D => (Api::Runtime, rt::MEMCPY_ASYNC, COMPUTE),
            Step::Memset => (Api::Runtime, rt::MEMSET_ASYNC, COMPUTE),
            Step::StreamSync => return self.stream_sync(th, COMPUTE),
        };
        let api_dur = self.rng.range(2_500, 7_500);
        let (corr, s, e) = self.api(api, cbid, th, api_dur);
        let ready = s + self.rng.range(2_000, 6_000);
        let start = self.gpu_start(ready, Some(slot));
        let mut row = GpuRow {
            start,
            end: start,
            dev,
            slot,
            corr,
            gnid: 0,
            annotation: None,
            lane: None,
        };
        match step {
            Step::K(k) | Step::Tri(k) | Step::Nccl(k) => {
                row.end = start + self.kernel_dur(k as usize);
                let queued = if self.rng.chance(300) {
                    0
                } else {
                    (s + self.rng.range(600, 1_800)).min(start)
                };
                self.kernel_row(&row, k as usize, queued);
            }
            Step::H2D | Step::D2H | Step::D2D => {
                let kind = match step {
                    Step::H2D => 1,
                    Step::D2H => 2,
                    _ => 8,
                };
                let (bytes, dur) = self.copy_shape(kind);
                row.end = start + dur;
                self.memcpy_row(&row, kind, bytes);
            }
            _ => {
                let bytes = 1 << self.rng.range(12, 26);
                row.end = start + bytes / 2_000 + 1_200;
                self.memset_row(&row, bytes);
            }
        }
        self.finish_gpu(slot, row.end);
        let _ = e;
    }
}
