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
    use super::super::packets::*;
    use super::super::proto::TracePacket;
    use super::super::wire::Wire;
    use super::*;
    use prost::Message;

    /// `body` encoded by the wire writer, decoded by prost (which writes the same bytes).
    fn decoded(body: impl FnOnce(&mut Wire)) -> TracePacket {
        let mut w = Wire::default();
        body(&mut w);
        let packet = TracePacket::decode(&w.buf[..]).expect("a TracePacket");
        assert_eq!(packet.encode_to_vec(), w.buf, "prost writes the same bytes");
        packet
    }

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

    /// Every value docs/export-merge.md renames, as each builder writes it for window 2.
    #[test]
    fn a_merged_windows_builders_write_its_values_renamed_and_shifted() {
        let r = PacketRemap::window(2, "rank 2 · ".into(), -1000).unwrap();
        let (sequence, mask) = (2 * (1 << 16) + 1, 3u64.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let pid = |p: i64| (3 << 24) + p;
        let event = |id: u64| (2 << 42) + id;
        let slice = Slice {
            ts: 5000,
            track_uuid: 4,
            name_iid: 1,
            gpu_correlation: &[7],
            ..Default::default()
        };
        let begin = decoded(|p| slice_begin(p, &slice, &r));
        let e = begin.track_event.unwrap();
        assert_eq!(
            (begin.timestamp, begin.trusted_packet_sequence_id),
            (Some(4000), Some(sequence))
        );
        assert_eq!(e.track_uuid, Some(4 ^ mask));
        assert_eq!(
            e.gpu_correlation.unwrap().render_stage_submission_event_ids,
            [event(7)]
        );
        let end = decoded(|p| slice_end(p, 6000, 4, &r));
        assert_eq!(
            (end.timestamp, end.track_event.unwrap().track_uuid),
            (Some(5000), Some(4 ^ mask))
        );
        let stage = RenderStage {
            ts: 5000,
            event_id: 9,
            gpu_id: 1,
            waits: &[3],
            ..Default::default()
        };
        let packet = decoded(|p| render_stage(p, &stage, &r));
        let g = packet.gpu_render_stage_event.unwrap();
        assert_eq!(
            (packet.timestamp, packet.trusted_packet_sequence_id),
            (Some(4000), Some(sequence))
        );
        assert_eq!(
            (g.event_id, g.event_wait_ids, g.gpu_id),
            (Some(event(9)), vec![event(3)], Some(201))
        );
        let counter = decoded(|p| counter_sample(p, 5000, 1, 0, 1.0, true, &r));
        assert_eq!(
            (counter.timestamp, counter.trusted_packet_sequence_id),
            (Some(4000), Some(sequence))
        );
        let clock = clock_snapshot(5000, &r);
        assert_eq!(clock.timestamp, Some(4000));
        assert!(clock
            .clock_snapshot
            .unwrap()
            .clocks
            .iter()
            .all(|c| c.timestamp == Some(4000)));
        let process = Track {
            uuid: 1,
            parent: 0,
            is_process: true,
            pid: 17,
            tid: 0,
            name: "python".into(),
        };
        let d = track_descriptor(&process, &r).track_descriptor.unwrap();
        assert_eq!((d.uuid, d.parent_uuid), (Some(1 ^ mask), None));
        let p = d.process.unwrap();
        assert_eq!(
            (p.pid, p.process_name.as_deref()),
            (Some(pid(17) as i32), Some("rank 2 · python"))
        );
        let thread = Track {
            uuid: 2,
            parent: 1,
            is_process: false,
            pid: 17,
            tid: 18,
            name: "thread 18".into(),
        };
        let d = track_descriptor(&thread, &r).track_descriptor.unwrap();
        assert_eq!((d.uuid, d.parent_uuid), (Some(2 ^ mask), Some(1 ^ mask)));
        let t = d.thread.unwrap();
        assert_eq!(
            (t.pid, t.tid, t.thread_name.as_deref()),
            (Some(pid(17) as i32), Some(pid(18)), Some("thread 18"))
        );
        let tables = Interned {
            counter_descriptors: vec![CounterDescriptor { iid: 1, gpu_id: 1 }],
            counter_specs: vec![(0, "sm active".into())],
            event_names: vec!["kernel".into()],
            gpu_specs: vec![(1, "Kernel".into(), 2)],
            graphics_pid: Some(17),
            ..Default::default()
        };
        let packet = interned(&tables, &r);
        assert_eq!(packet.trusted_packet_sequence_id, Some(sequence));
        let i = packet.interned_data.unwrap();
        let d = &i.gpu_counter_descriptors[0];
        assert_eq!(d.gpu_id, Some(201));
        let spec = &d.counter_descriptor.as_ref().unwrap().specs[0];
        assert_eq!(spec.name.as_deref(), Some("rank 2 · sm active"));
        assert_eq!(
            i.gpu_specifications[0].name.as_deref(),
            Some("rank 2 · Kernel")
        );
        assert_eq!(
            i.event_names[0].name.as_deref(),
            Some("kernel"),
            "event names stay"
        );
        assert_eq!(i.graphics_contexts[0].pid, Some(pid(17) as i32));
    }
}
