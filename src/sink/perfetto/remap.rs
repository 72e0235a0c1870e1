//! A window's place in a merged `.pftrace`: the renaming and time shift the packet encoders
//! ([`super::packets`]) apply to one window's values as they write them, so that several
//! windows (ranks) share one trace without their sequences, tracks, processes, GPUs, event
//! ids or clocks colliding. [`PacketRemap::NONE`] changes nothing (the single-window export;
//! its offsets are zeros, so it costs an add or XOR of 0 a value).
//!
//! What changes, for the window at position `ordinal` (docs/export-merge.md):
//! - `trusted_packet_sequence_id`: `ordinal * 2^16 + sequence`, which keeps the windows'
//!   interned data apart;
//! - track uuids (a descriptor's, its parent's, a track event's): XOR
//!   `(ordinal + 1) * 0x9E3779B97F4A7C15`;
//! - pids and tids (track descriptors, the graphics context): [`merged_pid`], as in the
//!   Chrome trace;
//! - GPU ids (render stages, counter descriptors): `ordinal * 100 + gpu`;
//! - render-stage event ids, and the ids naming them (a slice's `gpu_correlation`, a
//!   stage's `event_wait_ids`): `ordinal * 2^42 + id`;
//! - process names, GPU render-stage specification names (stages and hardware queues) and
//!   counter names: the window's prefix (`rank 3 · `);
//! - timestamps (packets', clock snapshots'; absolute ns): plus `shift_ns`.

use crate::error::Error;
use crate::sink::chrome::remap::{merged_pid, FLOW_STRIDE};
use crate::Result;

use super::SEQUENCE_ID;

/// GPU ids of window `ordinal` are `ordinal * GPU_STRIDE + gpu`.
pub const GPU_STRIDE: i32 = 100;
/// Sequences of window `ordinal` are `ordinal * SEQUENCE_STRIDE + sequence`.
pub const SEQUENCE_STRIDE: u32 = 1 << 16;
/// Windows a merged trace holds at most: the pids of window 127 pass `i32::MAX`.
pub const MAX_WINDOWS: usize = 127;

/// How one window's packets are renamed and shifted as they are encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketRemap {
    /// the window's position in the merged trace (0 first); None: a trace of its own
    ordinal: Option<u32>,
    /// put before process, render-stage specification and counter names
    prefix: String,
    /// added to every timestamp, ns
    shift_ns: i64,
    /// the window's own values of the strides above (none: 1, 0, 0, 0)
    sequence_id: u32,
    uuid_mask: u64,
    event_base: u64,
    gpu_base: i32,
}

impl PacketRemap {
    /// Nothing renamed, nothing shifted.
    pub const NONE: PacketRemap = PacketRemap {
        ordinal: None,
        prefix: String::new(),
        shift_ns: 0,
        sequence_id: SEQUENCE_ID,
        uuid_mask: 0,
        event_base: 0,
        gpu_base: 0,
    };

    /// The window at position `ordinal` of a merged trace, its names prefixed with `prefix`
    /// and its timestamps shifted by `shift_ns`.
    pub fn window(ordinal: u32, prefix: String, shift_ns: i64) -> Result<PacketRemap> {
        if ordinal as usize >= MAX_WINDOWS {
            return Err(Error::Usage(format!(
                "more than {MAX_WINDOWS} windows to merge into one .pftrace"
            )));
        }
        Ok(PacketRemap {
            ordinal: Some(ordinal),
            prefix,
            shift_ns,
            sequence_id: ordinal * SEQUENCE_STRIDE + SEQUENCE_ID,
            uuid_mask: (u64::from(ordinal) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            event_base: u64::from(ordinal) * FLOW_STRIDE as u64,
            gpu_base: ordinal as i32 * GPU_STRIDE,
        })
    }

    /// The trusted packet sequence of the window's sequenced packets.
    pub fn sequence_id(&self) -> u32 {
        self.sequence_id
    }

    /// A timestamp (absolute ns), shifted.
    pub fn ts(&self, ts: i64) -> i64 {
        ts.saturating_add(self.shift_ns)
    }

    /// A track uuid, renamed.
    pub fn uuid(&self, uuid: u64) -> u64 {
        uuid ^ self.uuid_mask
    }

    /// A render-stage event id (or an id naming one), renamed.
    pub fn event_id(&self, id: u64) -> u64 {
        id.wrapping_add(self.event_base)
    }

    /// A GPU id, renamed.
    pub fn gpu(&self, gpu: i32) -> i32 {
        gpu.wrapping_add(self.gpu_base)
    }

    /// A pid, renamed.
    pub fn pid(&self, pid: i32) -> i32 {
        match self.ordinal {
            None => pid,
            // In range: `window` takes no ordinal whose pids pass i32::MAX.
            Some(ordinal) => merged_pid(ordinal, pid.into()) as i32,
        }
    }

    /// A tid, renamed.
    pub fn tid(&self, tid: i64) -> i64 {
        match self.ordinal {
            None => tid,
            Some(ordinal) => merged_pid(ordinal, tid),
        }
    }

    /// A process, render-stage specification or counter name, prefixed.
    pub fn name(&self, name: &str) -> String {
        let mut out = String::with_capacity(self.prefix.len() + name.len());
        out.push_str(&self.prefix);
        out.push_str(name);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_changes_nothing() {
        let r = PacketRemap::NONE;
        assert_eq!(r.sequence_id(), SEQUENCE_ID);
        assert_eq!((r.ts(-5), r.ts(i64::MAX)), (-5, i64::MAX));
        assert_eq!(
            (r.uuid(7), r.event_id(u64::MAX), r.gpu(-1)),
            (7, u64::MAX, -1)
        );
        assert_eq!((r.pid(0x7FFF_FFFF), r.tid(-1)), (0x7FFF_FFFF, -1));
        assert_eq!(r.name("python"), "python");
    }

    #[test]
    fn a_window_gets_its_strides_and_the_last_window_its_pids_in_range() {
        let r = PacketRemap::window(3, "rank 3 · ".into(), -1500).unwrap();
        assert_eq!(r.sequence_id(), 3 * (1 << 16) + 1);
        assert_eq!(r.ts(10_000), 8_500);
        assert_eq!(r.uuid(r.uuid(42)), 42);
        assert_ne!(r.uuid(42), 42);
        assert_eq!(r.event_id(9), 3 * (1 << 42) + 9);
        assert_eq!(r.gpu(1), 301);
        assert_eq!(r.pid(17), 4 * (1 << 24) + 17);
        assert_eq!(r.tid(17), 4 * (1 << 24) + 17);
        assert_eq!(r.name("GPU 0"), "rank 3 · GPU 0");
        let last = PacketRemap::window(MAX_WINDOWS as u32 - 1, String::new(), 0).unwrap();
        assert_eq!(
            i64::from(last.pid(0x7FFF_FFFF)),
            merged_pid(MAX_WINDOWS as u32 - 1, 0x7FFF_FFFF)
        );
        assert!(PacketRemap::window(MAX_WINDOWS as u32, String::new(), 0).is_err());
    }
}
