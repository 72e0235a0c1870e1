//! Packet builders: the content of one packet in, with the fields the reference sets (spec
//! §2), zeros included. The packets written once (clock, tracks, interned data) come out as
//! [`TracePacket`] structs; the ones written millions of times (slices, render stages,
//! counter samples) are written straight onto the wire, in the bytes prost would write for
//! those structs (the tests decode them with prost and encode them again).
//!
//! Every builder takes the window's [`PacketRemap`] and writes its values renamed and
//! shifted (a merged trace); [`PacketRemap::NONE`] writes them as they are.

use std::collections::HashMap;

use super::proto::*;
use super::remap::PacketRemap;
use super::spread::{json_annotations, stage_extra_data, StageSpread};
use super::wire::Wire;

const CLOCK_BOOTTIME: u32 = 6;
const CLOCK_REALTIME: u32 = 1;
const INCREMENTAL_STATE_CLEARED: u32 = 1;
const NEEDS_INCREMENTAL_STATE: u32 = 2;
const SLICE_BEGIN: i64 = 1;
const SLICE_END: i64 = 2;
/// GpuCounterGroup COMPUTE.
const GROUP_COMPUTE: u32 = 6;

/// One track: a process (parent 0) or a thread of its process's track.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    pub uuid: u64,
    pub parent: u64,
    pub is_process: bool,
    pub pid: i32,
    pub tid: i64,
    pub name: String,
}

/// A GPU's counter descriptor: every spec (counter id, name) and the COMPUTE group's ids.
#[derive(Clone, Debug, Default)]
pub struct CounterDescriptor {
    pub iid: u64,
    pub gpu_id: i32,
}

/// The interned tables (iid = index + 1 unless given).
#[derive(Clone, Debug, Default)]
pub struct Interned {
    pub counter_descriptors: Vec<CounterDescriptor>,
    pub counter_specs: Vec<(u32, String)>,
    pub compute_group: Vec<u32>,
    pub event_names: Vec<String>,
    pub categories: Vec<String>,
    /// (iid, name, category)
    pub gpu_specs: Vec<(u64, String, i32)>,
    /// graphics context 1's pid, when there are render stages
    pub graphics_pid: Option<i32>,
    pub compute_kernels: Vec<String>,
    pub compute_arg_names: Vec<String>,
}

impl Interned {
    pub fn is_empty(&self) -> bool {
        self.counter_descriptors.is_empty()
            && self.event_names.is_empty()
            && self.categories.is_empty()
            && self.gpu_specs.is_empty()
            && self.graphics_pid.is_none()
            && self.compute_kernels.is_empty()
            && self.compute_arg_names.is_empty()
    }
}

/// A map keyed by text, looked up once per slice: a fast hash.
type TextMap = HashMap<String, u64, foldhash::fast::RandomState>;

/// Interning of event names and categories: each text's iid (from 1, in first-use order)
/// in the table it is appended to (an [`Interned`] table, or one of a stretch of events
/// interned apart and merged in order later).
#[derive(Default)]
pub struct Names {
    events: TextMap,
    categories: TextMap,
}

impl Names {
    /// The iid of event name `name` in `table`, appended when new.
    pub fn event(&mut self, name: &str, table: &mut Vec<String>) -> u64 {
        intern(&mut self.events, name, table)
    }

    /// The iid of category `category` in `table`, appended when new.
    pub fn category(&mut self, category: &str, table: &mut Vec<String>) -> u64 {
        intern(&mut self.categories, category, table)
    }
}

fn intern(iids: &mut TextMap, text: &str, table: &mut Vec<String>) -> u64 {
    if let Some(iid) = iids.get(text) {
        return *iid;
    }
    table.push(text.to_string());
    let iid = table.len() as u64;
    iids.insert(text.to_string(), iid);
    iid
}

/// A track-event slice's BEGIN content.
#[derive(Clone, Debug, Default)]
pub struct Slice<'a> {
    pub ts: i64,
    pub track_uuid: u64,
    pub name_iid: u64,
    /// 0 = none
    pub category_iid: u64,
    pub gpu_correlation: &'a [u64],
    pub ints: &'a [(&'a str, i64)],
    pub strs: &'a [(&'a str, &'a str)],
    pub json: Option<&'a str>,
}

/// One GPU render stage.
#[derive(Clone, Debug, Default)]
pub struct RenderStage<'a> {
    pub ts: i64,
    pub event_id: u64,
    pub duration: i64,
    pub gpu_id: i64,
    pub hw_queue_iid: u64,
    pub stage_iid: u64,
    pub name_iid: u64,
    pub waits: &'a [u64],
    /// (grid, block) for kernels (grid_x > 0)
    pub launch: Option<([i64; 3], [i64; 3])>,
    pub kernel_iid: u64,
    /// (arg name iid, value); zeros are skipped
    pub launch_args: &'a [(u64, i64)],
    /// numeric extra_data already filtered (name, value)
    pub numeric: &'a [(&'a str, i64)],
    pub constant: &'a [(&'a str, &'a str)],
    /// what is spread onto extra_data after the others
    pub spread: StageSpread<'a>,
}

fn sequenced(ts: Option<i64>, flags: Option<u32>, r: &PacketRemap) -> TracePacket {
    TracePacket {
        timestamp: ts.map(|t| r.ts(t) as u64),
        trusted_packet_sequence_id: Some(r.sequence_id()),
        sequence_flags: flags,
        ..Default::default()
    }
}

/// The ClockSnapshot anchoring BOOTTIME to REALTIME at `base_ns`.
pub fn clock_snapshot(base_ns: i64, r: &PacketRemap) -> TracePacket {
    let clock = |id| Clock {
        clock_id: Some(id),
        timestamp: Some(r.ts(base_ns) as u64),
    };
    TracePacket {
        clock_snapshot: Some(ClockSnapshot {
            clocks: vec![clock(CLOCK_BOOTTIME), clock(CLOCK_REALTIME)],
        }),
        ..sequenced(Some(base_ns), None, r)
    }
}

/// A track descriptor (no timestamp, no sequence).
pub fn track_descriptor(t: &Track, r: &PacketRemap) -> TracePacket {
    let mut d = TrackDescriptor {
        uuid: Some(r.uuid(t.uuid)),
        parent_uuid: (t.parent != 0).then(|| r.uuid(t.parent)),
        ..Default::default()
    };
    if t.is_process {
        d.process = Some(ProcessDescriptor {
            pid: Some(r.pid(t.pid)),
            process_name: Some(r.name(&t.name)),
        });
    } else {
        d.thread = Some(ThreadDescriptor {
            pid: Some(r.pid(t.pid)),
            tid: Some(r.tid(t.tid)),
            thread_name: Some(t.name.clone()),
        });
    }
    TracePacket {
        track_descriptor: Some(d),
        ..Default::default()
    }
}

fn names(list: &[String]) -> Vec<InternedName> {
    list.iter()
        .enumerate()
        .map(|(i, n)| InternedName {
            iid: Some(i as u64 + 1),
            name: Some(n.clone()),
        })
        .collect()
}

/// The interned-data packet (INCREMENTAL_STATE_CLEARED).
pub fn interned(t: &Interned, r: &PacketRemap) -> TracePacket {
    let descriptor = GpuCounterDescriptor {
        specs: t
            .counter_specs
            .iter()
            .map(|(id, name)| GpuCounterSpec {
                counter_id: Some(*id),
                name: Some(r.name(name)),
            })
            .collect(),
        counter_groups: if t.compute_group.is_empty() {
            Vec::new()
        } else {
            vec![GpuCounterGroupSpec {
                group_id: Some(GROUP_COMPUTE),
                counter_ids: t.compute_group.clone(),
            }]
        },
    };
    let data = InternedData {
        gpu_counter_descriptors: t
            .counter_descriptors
            .iter()
            .map(|d| InternedGpuCounterDescriptor {
                iid: Some(d.iid),
                counter_descriptor: Some(descriptor.clone()),
                gpu_id: Some(r.gpu(d.gpu_id)),
            })
            .collect(),
        event_names: names(&t.event_names),
        event_categories: names(&t.categories),
        gpu_specifications: t
            .gpu_specs
            .iter()
            .map(|(iid, name, cat)| InternedGpuRenderStageSpecification {
                iid: Some(*iid),
                name: Some(r.name(name)),
                category: Some(*cat),
            })
            .collect(),
        graphics_contexts: t
            .graphics_pid
            .map(|pid| InternedGraphicsContext {
                iid: Some(1),
                pid: Some(r.pid(pid)),
            })
            .into_iter()
            .collect(),
        compute_kernels: t
            .compute_kernels
            .iter()
            .enumerate()
            .map(|(i, n)| InternedComputeKernel {
                iid: Some(i as u64 + 1),
                demangled_name: Some(n.clone()),
            })
            .collect(),
        compute_arg_names: names(&t.compute_arg_names),
    };
    TracePacket {
        interned_data: Some(data),
        ..sequenced(None, Some(INCREMENTAL_STATE_CLEARED), r)
    }
}

/// A SLICE_BEGIN packet's body: TracePacket 8 timestamp, 10 sequence, 11 track_event
/// (3 category, 4 annotations, 9 type, 10 name, 11 track, 3000 gpu_correlation), 13 flags.
pub fn slice_begin(p: &mut Wire, s: &Slice, r: &PacketRemap) {
    p.int(8, r.ts(s.ts));
    p.uint(10, r.sequence_id().into());
    p.message(11, |e| {
        if s.category_iid != 0 {
            e.uint(3, s.category_iid);
        }
        for (name, v) in s.ints {
            e.message(4, |a| {
                a.int(4, *v);
                a.bytes(10, name.as_bytes());
            });
        }
        for (name, v) in s.strs {
            e.message(4, |a| {
                a.bytes(6, v.as_bytes());
                a.bytes(10, name.as_bytes());
            });
        }
        if let Some(json) = s.json {
            json_annotations(json, e);
        }
        e.int(9, SLICE_BEGIN);
        e.uint(10, s.name_iid);
        e.uint(11, r.uuid(s.track_uuid));
        if !s.gpu_correlation.is_empty() {
            e.message(3000, |g| {
                for id in s.gpu_correlation {
                    g.uint(1, r.event_id(*id));
                }
            });
        }
    });
    p.uint(13, NEEDS_INCREMENTAL_STATE.into());
}

/// A SLICE_END packet's body (no sequence flags).
pub fn slice_end(p: &mut Wire, ts: i64, track_uuid: u64, r: &PacketRemap) {
    p.int(8, r.ts(ts));
    p.uint(10, r.sequence_id().into());
    p.message(11, |e| {
        e.int(9, SLICE_END);
        e.uint(11, r.uuid(track_uuid));
    });
}

/// A GpuRenderStageEvent packet's body: TracePacket 8, 10, 13, then 53 with its fields in
/// tag order (1 event, 2 duration, 5 context, 6 extra_data, 11 gpu, 13 hw queue, 14 stage,
/// 18 waits, 19 kernel, 20 name, 21 launch).
pub fn render_stage(p: &mut Wire, s: &RenderStage, r: &PacketRemap) {
    p.int(8, r.ts(s.ts));
    p.uint(10, r.sequence_id().into());
    p.uint(13, NEEDS_INCREMENTAL_STATE.into());
    // Render stages with their extra_data are usually 128 bytes or longer.
    p.message_sized(53, 2, |g| {
        g.uint(1, r.event_id(s.event_id));
        g.int(2, s.duration);
        g.uint(5, 1);
        for (name, v) in s.numeric {
            g.message(6, |e| {
                e.bytes(1, name.as_bytes());
                e.decimal(2, *v);
            });
        }
        for (name, v) in s.constant {
            g.message(6, |e| {
                e.bytes(1, name.as_bytes());
                e.bytes(2, v.as_bytes());
            });
        }
        stage_extra_data(&s.spread, g);
        g.int(11, i64::from(r.gpu(s.gpu_id as i32)));
        g.uint(13, s.hw_queue_iid);
        g.uint(14, s.stage_iid);
        for id in s.waits {
            g.uint(18, r.event_id(*id));
        }
        if s.launch.is_some() && s.kernel_iid != 0 {
            g.uint(19, s.kernel_iid);
        }
        if s.name_iid != 0 {
            g.uint(20, s.name_iid);
        }
        if let Some((grid, block)) = s.launch {
            g.message(21, |l| {
                l.message(1, |d| dim3(d, grid));
                l.message(2, |d| dim3(d, block));
                for (iid, v) in s.launch_args.iter().filter(|(_, v)| *v != 0) {
                    l.message(3, |a| {
                        a.uint(1, *iid);
                        a.int(4, *v);
                    });
                }
            });
        }
    });
}

/// A Dim3's body: x, y, z as uint32.
fn dim3(d: &mut Wire, v: [i64; 3]) {
    for (field, v) in (1..).zip(v) {
        d.uint(field, u64::from(v as u32));
    }
}

/// A GpuCounterEvent packet's body with one sample: TracePacket 8, 10, 13, then 52 (2 the
/// counter, 4 the descriptor).
pub fn counter_sample(
    p: &mut Wire,
    ts: i64,
    descriptor_iid: u64,
    counter_id: u32,
    value: f64,
    is_int: bool,
    r: &PacketRemap,
) {
    p.int(8, r.ts(ts));
    p.uint(10, r.sequence_id().into());
    p.uint(13, NEEDS_INCREMENTAL_STATE.into());
    p.message(52, |g| {
        g.message(2, |c| {
            c.uint(1, counter_id.into());
            if is_int {
                c.int(2, value.round() as i64);
            } else {
                c.double(3, value);
            }
        });
        g.uint(4, descriptor_iid);
    });
}

#[cfg(test)]
mod tests {
    use super::super::SEQUENCE_ID;
    use super::*;
    use prost::Message;

    /// `body` encoded by the wire writer, decoded by prost; the wire bytes must be what prost
    /// writes for the decoded packet (fields in tag order, minimal varints).
    fn decoded(body: impl FnOnce(&mut Wire)) -> TracePacket {
        let mut w = Wire::default();
        body(&mut w);
        let packet = TracePacket::decode(&w.buf[..]).expect("a TracePacket");
        assert_eq!(packet.encode_to_vec(), w.buf, "prost writes the same bytes");
        packet
    }

    fn annotation(name: &str, int: Option<i64>, string: Option<&str>) -> DebugAnnotation {
        DebugAnnotation {
            name: Some(name.into()),
            int_value: int,
            string_value: string.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_slice_begin_carries_its_annotations_and_correlations() {
        let slice = Slice {
            ts: 1_700_000_000_000_000_123,
            track_uuid: 77,
            name_iid: 300,
            category_iid: 2,
            gpu_correlation: &[5, 1 << 40],
            ints: &[("cbid", 211), ("correlation", -1)],
            strs: &[("cuda_sync_kind", "Stream")],
            json: Some(r#"{"b": "x", "a": 1}"#),
        };
        let packet = decoded(|p| slice_begin(p, &slice, &PacketRemap::NONE));
        let expected = TracePacket {
            timestamp: Some(1_700_000_000_000_000_123),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            sequence_flags: Some(NEEDS_INCREMENTAL_STATE),
            track_event: Some(TrackEvent {
                r#type: Some(SLICE_BEGIN as i32),
                track_uuid: Some(77),
                name_iid: Some(300),
                category_iids: vec![2],
                debug_annotations: vec![
                    annotation("cbid", Some(211), None),
                    annotation("correlation", Some(-1), None),
                    annotation("cuda_sync_kind", None, Some("Stream")),
                    annotation("a", Some(1), None),
                    annotation("b", None, Some("x")),
                ],
                gpu_correlation: Some(GpuCorrelation {
                    render_stage_submission_event_ids: vec![5, 1 << 40],
                }),
            }),
            ..Default::default()
        };
        assert_eq!(packet, expected);
    }

    #[test]
    fn a_bare_slice_begin_and_its_end() {
        let slice = Slice {
            ts: 10,
            track_uuid: 1,
            name_iid: 1,
            ..Default::default()
        };
        let event = decoded(|p| slice_begin(p, &slice, &PacketRemap::NONE))
            .track_event
            .unwrap();
        assert!(event.category_iids.is_empty() && event.debug_annotations.is_empty());
        assert_eq!(event.gpu_correlation, None);
        let end = decoded(|p| slice_end(p, 20, 1, &PacketRemap::NONE));
        assert_eq!(end.sequence_flags, None);
        assert_eq!(end.timestamp, Some(20));
        let event = end.track_event.unwrap();
        assert_eq!((event.r#type, event.track_uuid), (Some(2), Some(1)));
        assert_eq!(event.name_iid, None);
    }

    #[test]
    fn a_kernel_stage_carries_its_launch_waits_and_extra_data() {
        let stage = RenderStage {
            ts: 100,
            event_id: 9,
            duration: 0,
            gpu_id: 1,
            hw_queue_iid: 101,
            stage_iid: 1,
            name_iid: 4,
            waits: &[3, 7],
            launch: Some(([128, 1, 1], [256, 2, 1])),
            kernel_iid: 2,
            launch_args: &[(1, 32), (2, 0), (3, 512)],
            numeric: &[("device id", 1), ("correlation", -5)],
            constant: &[("arch", "sm_90")],
            spread: StageSpread {
                metadata: Some(r#"{"n": 3}"#),
                host_fn: Some("cb"),
                ..Default::default()
            },
        };
        let packet = decoded(|p| render_stage(p, &stage, &PacketRemap::NONE));
        let extra = |n: &str, v: &str| ExtraData {
            name: Some(n.into()),
            value: Some(v.into()),
        };
        let dim = |x, y, z| Dim3 {
            x: Some(x),
            y: Some(y),
            z: Some(z),
        };
        let arg = |iid, v| ExtraComputeArg {
            name_iid: Some(iid),
            uint_value: Some(v),
        };
        let expected = GpuRenderStageEvent {
            event_id: Some(9),
            duration: Some(0),
            gpu_id: Some(1),
            hw_queue_iid: Some(101),
            stage_iid: Some(1),
            context: Some(1),
            name_iid: Some(4),
            event_wait_ids: vec![3, 7],
            kernel_iid: Some(2),
            launch: Some(ComputeKernelLaunch {
                grid_size: Some(dim(128, 1, 1)),
                workgroup_size: Some(dim(256, 2, 1)),
                args: vec![arg(1, 32), arg(3, 512)],
            }),
            extra_data: vec![
                extra("device id", "1"),
                extra("correlation", "-5"),
                extra("arch", "sm_90"),
                extra("host fn", "cb"),
                extra("n", "3"),
            ],
        };
        assert_eq!(packet.timestamp, Some(100));
        assert_eq!(packet.sequence_flags, Some(NEEDS_INCREMENTAL_STATE));
        assert_eq!(packet.gpu_render_stage_event, Some(expected));
    }

    #[test]
    fn a_copy_stage_has_no_launch_or_kernel() {
        let stage = RenderStage {
            ts: 5,
            event_id: 1,
            duration: 3,
            gpu_id: 0,
            stage_iid: 2,
            kernel_iid: 2,
            ..Default::default()
        };
        let event = decoded(|p| render_stage(p, &stage, &PacketRemap::NONE))
            .gpu_render_stage_event
            .unwrap();
        assert_eq!(
            (event.launch, event.kernel_iid, event.name_iid),
            (None, None, None)
        );
        assert_eq!(event.gpu_id, Some(0));
        assert!(event.extra_data.is_empty() && event.event_wait_ids.is_empty());
    }

    #[test]
    fn counter_samples_are_int_or_double() {
        let int = decoded(|p| counter_sample(p, 1, 2, 3, 41.6, true, &PacketRemap::NONE));
        let double = decoded(|p| counter_sample(p, 1, 2, 3, 41.6, false, &PacketRemap::NONE));
        let counter = |p: TracePacket| {
            let event = p.gpu_counter_event.unwrap();
            assert_eq!(event.counter_descriptor_iid, Some(2));
            event.counters.into_iter().next().unwrap()
        };
        let int = counter(int);
        assert_eq!(
            (int.counter_id, int.int_value, int.double_value),
            (Some(3), Some(42), None)
        );
        let double = counter(double);
        assert_eq!((double.int_value, double.double_value), (None, Some(41.6)));
    }
}
