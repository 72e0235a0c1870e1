//! Packet builders: the content of one packet in, a [`TracePacket`] out, with the fields the
//! reference sets (spec §2), zeros included.

use super::proto::*;
use super::spread::{json_annotations, json_extra_data};
use super::SEQUENCE_ID;

const CLOCK_BOOTTIME: u32 = 6;
const CLOCK_REALTIME: u32 = 1;
const INCREMENTAL_STATE_CLEARED: u32 = 1;
const NEEDS_INCREMENTAL_STATE: u32 = 2;
const SLICE_BEGIN: i32 = 1;
const SLICE_END: i32 = 2;
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
    pub json: Option<&'a str>,
}

fn sequenced(ts: Option<i64>, flags: Option<u32>) -> TracePacket {
    TracePacket {
        timestamp: ts.map(|t| t as u64),
        trusted_packet_sequence_id: Some(SEQUENCE_ID),
        sequence_flags: flags,
        ..Default::default()
    }
}

/// The ClockSnapshot anchoring BOOTTIME to REALTIME at `base_ns`.
pub fn clock_snapshot(base_ns: i64) -> TracePacket {
    let clock = |id| Clock {
        clock_id: Some(id),
        timestamp: Some(base_ns as u64),
    };
    TracePacket {
        clock_snapshot: Some(ClockSnapshot {
            clocks: vec![clock(CLOCK_BOOTTIME), clock(CLOCK_REALTIME)],
        }),
        ..sequenced(Some(base_ns), None)
    }
}

/// A track descriptor (no timestamp, no sequence).
pub fn track_descriptor(t: &Track) -> TracePacket {
    let mut d = TrackDescriptor {
        uuid: Some(t.uuid),
        parent_uuid: (t.parent != 0).then_some(t.parent),
        ..Default::default()
    };
    if t.is_process {
        d.process = Some(ProcessDescriptor {
            pid: Some(t.pid),
            process_name: Some(t.name.clone()),
        });
    } else {
        d.thread = Some(ThreadDescriptor {
            pid: Some(t.pid),
            tid: Some(t.tid),
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
pub fn interned(t: &Interned) -> TracePacket {
    let descriptor = GpuCounterDescriptor {
        specs: t
            .counter_specs
            .iter()
            .map(|(id, name)| GpuCounterSpec {
                counter_id: Some(*id),
                name: Some(name.clone()),
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
                gpu_id: Some(d.gpu_id),
            })
            .collect(),
        event_names: names(&t.event_names),
        event_categories: names(&t.categories),
        gpu_specifications: t
            .gpu_specs
            .iter()
            .map(|(iid, name, cat)| InternedGpuRenderStageSpecification {
                iid: Some(*iid),
                name: Some(name.clone()),
                category: Some(*cat),
            })
            .collect(),
        graphics_contexts: t
            .graphics_pid
            .map(|pid| InternedGraphicsContext {
                iid: Some(1),
                pid: Some(pid),
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
        ..sequenced(None, Some(INCREMENTAL_STATE_CLEARED))
    }
}

/// A SLICE_BEGIN packet.
pub fn slice_begin(s: &Slice) -> TracePacket {
    let mut annotations = Vec::with_capacity(s.ints.len() + s.strs.len());
    for (name, v) in s.ints {
        annotations.push(DebugAnnotation {
            name: Some(name.to_string()),
            int_value: Some(*v),
            ..Default::default()
        });
    }
    for (name, v) in s.strs {
        annotations.push(DebugAnnotation {
            name: Some(name.to_string()),
            string_value: Some(v.to_string()),
            ..Default::default()
        });
    }
    if let Some(json) = s.json {
        json_annotations(json, &mut annotations);
    }
    TracePacket {
        track_event: Some(TrackEvent {
            r#type: Some(SLICE_BEGIN),
            track_uuid: Some(s.track_uuid),
            name_iid: Some(s.name_iid),
            category_iids: if s.category_iid != 0 {
                vec![s.category_iid]
            } else {
                Vec::new()
            },
            debug_annotations: annotations,
            gpu_correlation: (!s.gpu_correlation.is_empty()).then(|| GpuCorrelation {
                render_stage_submission_event_ids: s.gpu_correlation.to_vec(),
            }),
        }),
        ..sequenced(Some(s.ts), Some(NEEDS_INCREMENTAL_STATE))
    }
}

/// A SLICE_END packet (no sequence flags).
pub fn slice_end(ts: i64, track_uuid: u64) -> TracePacket {
    TracePacket {
        track_event: Some(TrackEvent {
            r#type: Some(SLICE_END),
            track_uuid: Some(track_uuid),
            ..Default::default()
        }),
        ..sequenced(Some(ts), None)
    }
}

fn dim3(v: [i64; 3]) -> Dim3 {
    Dim3 {
        x: Some(v[0] as u32),
        y: Some(v[1] as u32),
        z: Some(v[2] as u32),
    }
}

/// A GpuRenderStageEvent packet.
pub fn render_stage(r: &RenderStage) -> TracePacket {
    let mut extra: Vec<ExtraData> = r
        .numeric
        .iter()
        .map(|(k, v)| ExtraData {
            name: Some(k.to_string()),
            value: Some(v.to_string()),
        })
        .collect();
    extra.extend(r.constant.iter().map(|(k, v)| ExtraData {
        name: Some(k.to_string()),
        value: Some(v.to_string()),
    }));
    if let Some(json) = r.json {
        json_extra_data(json, &mut extra);
    }
    let launch = r.launch.map(|(grid, block)| ComputeKernelLaunch {
        grid_size: Some(dim3(grid)),
        workgroup_size: Some(dim3(block)),
        args: r
            .launch_args
            .iter()
            .filter(|(_, v)| *v != 0)
            .map(|(iid, v)| ExtraComputeArg {
                name_iid: Some(*iid),
                uint_value: Some(*v as u64),
            })
            .collect(),
    });
    TracePacket {
        gpu_render_stage_event: Some(GpuRenderStageEvent {
            event_id: Some(r.event_id),
            duration: Some(r.duration as u64),
            gpu_id: Some(r.gpu_id as i32),
            hw_queue_iid: Some(r.hw_queue_iid),
            stage_iid: Some(r.stage_iid),
            context: Some(1),
            name_iid: (r.name_iid != 0).then_some(r.name_iid),
            event_wait_ids: r.waits.to_vec(),
            kernel_iid: (launch.is_some() && r.kernel_iid != 0).then_some(r.kernel_iid),
            launch,
            extra_data: extra,
        }),
        ..sequenced(Some(r.ts), Some(NEEDS_INCREMENTAL_STATE))
    }
}

/// A GpuCounterEvent packet with one sample.
pub fn counter_sample(
    ts: i64,
    descriptor_iid: u64,
    counter_id: u32,
    value: f64,
    is_int: bool,
) -> TracePacket {
    let counter = GpuCounter {
        counter_id: Some(counter_id),
        int_value: is_int.then(|| value.round() as i64),
        double_value: (!is_int).then_some(value),
    };
    TracePacket {
        gpu_counter_event: Some(GpuCounterEvent {
            counter_descriptor_iid: Some(descriptor_iid),
            counters: vec![counter],
        }),
        ..sequenced(Some(ts), Some(NEEDS_INCREMENTAL_STATE))
    }
}
