//! Synchronization calls: cudaStreamSynchronize, cudaEventRecord (cuda_event rows),
//! cudaStreamWaitEvent, cudaEventSynchronize, cudaDeviceSynchronize (cuda_sync rows), and the
//! NCCL watchdog's event polling.

use super::catalog::rt;
use super::gpu::Api;
use super::sim::{Sim, COMM, COMPUTE};
use super::table::V;

const SYNC_INVALID: i64 = 0xFFFF_FFFF;

impl Sim<'_> {
    fn sync_row(
        &mut self,
        ty: i64,
        s: i64,
        e: i64,
        slot: Option<usize>,
        corr: i64,
        ev: (i64, i64),
    ) {
        if !self.f.syncs {
            return;
        }
        let d = &self.devs[self.cur_dev];
        let stream = slot.map_or(SYNC_INVALID, |s| d.streams[s]);
        let ctx = d.ctx;
        self.tb.sync.push(&[
            V::I(ty),
            V::I(s),
            V::I(e),
            V::I(ctx),
            V::I(stream),
            V::I(corr),
            V::I(ev.0),
            V::I(ev.1),
        ]);
    }

    /// A blocking API call that waits until `until`; returns (correlation, wait start, wait end).
    fn blocking(&mut self, cbid: i64, th: usize, until: i64) -> (i64, i64, i64) {
        let s = self.t;
        let wait_end = until.max(s + self.rng.range(1_000, 2_500));
        let (corr, _, _) = self.api(Api::Runtime, cbid, th, wait_end + 900 - s);
        (corr, s + 300, wait_end)
    }

    pub fn stream_sync(&mut self, th: usize, slot: usize) {
        let until = self.devs[self.cur_dev].free[slot] + self.rng.range(400, 1_500);
        let (corr, s, e) = self.blocking(rt::STREAM_SYNCHRONIZE, th, until);
        self.sync_row(3, s, e, Some(slot), corr, (SYNC_INVALID, 0));
    }

    /// cudaEventRecord on `slot`: the cuda_event row; returns (event id, sync id, device time).
    fn event_record(&mut self, slot: usize) -> (i64, i64, i64) {
        let dur = self.rng.range(1_800, 4_000);
        let (corr, _, e) = self.api(Api::Runtime, rt::EVENT_RECORD, 0, dur);
        self.event_ctr += 1;
        self.sync_id += 1;
        let (ev, sid) = (
            9 + self.event_ctr % 6 + 16 * self.cur_dev as i64,
            self.sync_id,
        );
        let d = &self.devs[self.cur_dev];
        let ts = d.free[slot].max(e + 1_000);
        if self.f.syncs {
            let row = [
                V::I(sid),
                V::I(corr),
                V::I(self.cur_dev as i64),
                V::I(d.ctx),
                V::I(d.streams[slot]),
                V::N,
                V::I(ev),
                V::I(ts),
                V::I(ts),
                V::N,
                V::N,
            ];
            self.tb.event.push(&row);
        }
        self.t += self.rng.range(500, 2_000);
        (ev, sid, ts)
    }

    /// Record on the compute stream; the comm stream waits on it (Stream Wait Event).
    pub fn event_pair(&mut self) {
        let (ev, sid, ts) = self.event_record(COMPUTE);
        let dur = self.rng.range(1_500, 3_000);
        let (corr, s, e) = self.api(Api::Runtime, rt::STREAM_WAIT_EVENT, 0, dur);
        self.sync_row(2, s, e, Some(COMM), corr, (ev, sid));
        let d = &mut self.devs[self.cur_dev];
        d.free[COMM] = d.free[COMM].max(ts);
    }

    /// Record on the comm stream, then the host waits for it (Event Sync).
    pub fn event_sync(&mut self) {
        let (ev, sid, ts) = self.event_record(COMM);
        let (corr, s, e) = self.blocking(rt::EVENT_SYNCHRONIZE, 0, ts + 800);
        self.sync_row(1, s, e, None, corr, (ev, sid));
    }

    /// cudaDeviceSynchronize (Context Sync): waits for every stream of the device.
    pub fn device_sync(&mut self) {
        let until = self.devs[self.cur_dev]
            .free
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            + 1_000;
        let (corr, s, e) = self.blocking(rt::DEVICE_SYNCHRONIZE, 0, until);
        self.sync_row(4, s, e, None, corr, (SYNC_INVALID, 0));
    }

    /// The NCCL watchdog polls its work events (no external id, no thread mapping).
    pub fn watchdog(&mut self) {
        for _ in 0..self.rng.range(1, 2) {
            let dur = self.rng.range(400, 1_500);
            self.api(Api::Runtime, rt::EVENT_QUERY, 2, dur);
            self.t += self.rng.range(300, 1_000);
        }
    }
}
