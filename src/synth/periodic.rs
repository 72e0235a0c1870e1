//! Time-driven rows (environment, pm_sampling, overhead), the window's closing rows (trailing
//! Activity Buffer Request) and window_info.

use super::catalog::{ACTIVITY_BUFFER_REQUEST, OVERHEADS, PM_METRICS};
use super::sim::Sim;
use super::table::V;
use crate::schema::SCHEMA_VERSION;

const ENV_PERIOD_NS: i64 = 20_000_000;
const PM_PERIOD_NS: i64 = 3_000_000;

impl Sim<'_> {
    /// Emit every periodic row due by the CPU cursor.
    pub fn tick(&mut self) {
        if self.f.counters {
            while self.next_env <= self.t {
                let at = self.next_env;
                for d in 0..self.devs.len() {
                    let ts = at + 211 * d as i64;
                    for kind in 1..=4u64 {
                        let data = self.env_data(kind);
                        self.tb.env.push(&[
                            V::I(ts),
                            V::I(d as i64),
                            V::I(kind as i64),
                            V::U(data),
                        ]);
                    }
                }
                self.next_env += ENV_PERIOD_NS;
            }
            while self.next_pm <= self.t {
                let at = self.next_pm;
                for d in 0..self.devs.len() {
                    let mut row = [V::N; 6];
                    row[0] = V::I(at + 97 * d as i64);
                    row[1] = V::I(d as i64);
                    let busy = self.rng.unit();
                    row[2] = V::F((busy * 1000.0).round() / 10.0 * 0.98);
                    row[3] = V::F((self.rng.unit() * 600.0).round() / 10.0);
                    row[4] = V::F((busy * self.rng.unit() * 700.0).round() / 10.0);
                    row[5] = V::F((self.rng.unit() * 4.5e10).round());
                    debug_assert_eq!(row.len(), 2 + PM_METRICS.len());
                    self.tb.pm.push(&row);
                }
                self.next_pm += PM_PERIOD_NS;
            }
        }
        if self.f.overhead {
            while self.next_ovh <= self.t {
                let s = self.next_ovh;
                let (code, name) = if self.rng.chance(400) {
                    ACTIVITY_BUFFER_REQUEST
                } else {
                    *self.rng.pick(OVERHEADS)
                };
                let e = s + self.rng.range(800, 25_000);
                self.tb
                    .overhead
                    .push(&[V::I(s), V::I(e), V::I(0), V::S(name), V::I(code)]);
                self.max_ts = self.max_ts.max(e);
                self.next_ovh += self.rng.range(1_000_000, 4_000_000);
            }
        }
    }

    /// The packed `data` of environment kind 1 SPEED, 2 TEMPERATURE, 3 POWER, 4 COOLING.
    fn env_data(&mut self, kind: u64) -> u64 {
        match kind {
            1 => self.rng.range(1_755, 1_980) as u64 | (2_619u64 << 32),
            2 => self.rng.range(38, 71) as u64,
            3 => self.rng.range(310_000, 690_000) as u64 | (700_000u64 << 32),
            _ => self.rng.range(30, 60) as u64,
        }
    }

    /// Close open regions and the partial iteration, then the trailing overhead row.
    /// Returns (last timestamp, window boundary).
    pub fn close(&mut self) -> (i64, i64) {
        for p in 0..self.procs.len() {
            self.close_region(p);
            if self.procs[p].pos < self.procs[p].plan.len() {
                self.iter_end(p);
            }
        }
        let mut last = self.max_ts.max(self.t);
        if self.f.overhead {
            let s = last + self.rng.range(2_000, 20_000);
            let e = s + self.rng.range(3_000, 8_000);
            let (code, name) = ACTIVITY_BUFFER_REQUEST;
            self.tb
                .overhead
                .push(&[V::I(s), V::I(e), V::I(0), V::S(name), V::I(code)]);
            last = e;
        }
        let boundary = (last / 1_000_000 + 1) * 1_000_000;
        (last, boundary)
    }

    pub fn window_info(&mut self, wid: i64, t0: i64, boundary: i64, base_ns: Option<i64>) {
        let start = t0 - 1_000;
        self.tb.window_info.push(&[
            V::I(wid),
            V::I(start),
            V::I(boundary),
            base_ns.map_or(V::N, V::I),
            V::S(SCHEMA_VERSION),
            V::S("tracesql synth"),
            V::I(130_000),
            V::S("cupti-13.0.85"),
        ]);
    }
}
