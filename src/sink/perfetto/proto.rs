//! The Perfetto trace messages the `.pftrace` sink writes, as hand-written `prost` structs:
//! exactly the fields the reference exporter sets (../shared/spec/perfetto-encoding.md §1).
//!
//! Every message is proto2 upstream (google/perfetto, `protos/perfetto/...`), so scalars are
//! `Option<T>` and a `Some(0)` is written, as protozero writes every field it sets. Repeated
//! scalars are `packed = "false"`: none is `[packed = true]` upstream and trace_processor
//! reads them one tag per element. Oneofs are flattened into optional fields (one arm set);
//! extensions (InternedData 1000/1001, TrackEvent 3000) are plain fields with their tags.

/// `trace/trace_packet.proto` TracePacket (the file is `Trace.packet` = 1, repeated).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// 8: absolute ns in the trace clock (BOOTTIME: `timestamp_clock_id` is never set)
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// 10: `trusted_packet_sequence_id` (oneof optional_trusted_packet_sequence_id)
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// 13: INCREMENTAL_STATE_CLEARED 1, NEEDS_INCREMENTAL_STATE 2
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// 12
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// 6 (data oneof)
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// 11 (data oneof)
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// 52 (data oneof)
    #[prost(message, optional, tag = "52")]
    pub gpu_counter_event: Option<GpuCounterEvent>,
    /// 53 (data oneof)
    #[prost(message, optional, tag = "53")]
    pub gpu_render_stage_event: Option<GpuRenderStageEvent>,
    /// 60 (data oneof)
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
}

/// `trace/clock_snapshot.proto` ClockSnapshot: `clocks` = 1.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
}

/// `trace/clock_snapshot.proto` ClockSnapshot.Clock: `clock_id` = 1, `timestamp` = 2.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
}

/// `trace/track_event/track_descriptor.proto` TrackDescriptor: uuid 1, parent_uuid 5,
/// process 3, thread 4.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
}

/// `trace/track_event/process_descriptor.proto` ProcessDescriptor: pid 1, process_name 6.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `trace/track_event/thread_descriptor.proto` ThreadDescriptor: pid 1, tid 2 (int64 now,
/// int32 before: the same varint), thread_name 5.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `trace/track_event/track_event.proto` TrackEvent: type 9, track_uuid 11, name_iid 10,
/// category_iids 3 (repeated uint64, unpacked), debug_annotations 4, and the extension
/// `gpu_correlation` 3000 (`GpuTrackEvent`, out of the upstream tree).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// SLICE_BEGIN 1, SLICE_END 2
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    #[prost(message, optional, tag = "3000")]
    pub gpu_correlation: Option<GpuCorrelation>,
}

/// GpuCorrelation (extension message of the reference):
/// `render_stage_submission_event_ids` = 1 (repeated uint64, unpacked).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCorrelation {
    #[prost(uint64, repeated, packed = "false", tag = "1")]
    pub render_stage_submission_event_ids: Vec<u64>,
}

/// `trace/track_event/debug_annotation.proto` DebugAnnotation: name 10, bool_value 2,
/// int_value 4, double_value 5, string_value 6, dict_entries 11, array_values 12.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    #[prost(bool, optional, tag = "2")]
    pub bool_value: Option<bool>,
    #[prost(int64, optional, tag = "4")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "5")]
    pub double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    pub string_value: Option<String>,
    #[prost(message, repeated, tag = "11")]
    pub dict_entries: Vec<DebugAnnotation>,
    #[prost(message, repeated, tag = "12")]
    pub array_values: Vec<DebugAnnotation>,
}

/// `trace/interned_data/interned_data.proto` InternedData: event_categories 1, event_names 2,
/// graphics_contexts 23, gpu_specifications 24, gpu_counter_descriptors 47, and the
/// `GpuInternedData` extensions compute_kernels 1000 and compute_arg_names 1001.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    #[prost(message, repeated, tag = "47")]
    pub gpu_counter_descriptors: Vec<InternedGpuCounterDescriptor>,
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedName>,
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedName>,
    #[prost(message, repeated, tag = "24")]
    pub gpu_specifications: Vec<InternedGpuRenderStageSpecification>,
    #[prost(message, repeated, tag = "23")]
    pub graphics_contexts: Vec<InternedGraphicsContext>,
    #[prost(message, repeated, tag = "1000")]
    pub compute_kernels: Vec<InternedComputeKernel>,
    #[prost(message, repeated, tag = "1001")]
    pub compute_arg_names: Vec<InternedName>,
}

/// EventName / EventCategory (`track_event/track_event.proto`) and InternedComputeArgName:
/// all three are `{iid = 1, name = 2}`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedName {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `trace/gpu/gpu_render_stage_event.proto` InternedGraphicsContext: iid 1, pid 2.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedGraphicsContext {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(int32, optional, tag = "2")]
    pub pid: Option<i32>,
}

/// `trace/gpu/gpu_render_stage_event.proto` InternedGpuRenderStageSpecification: iid 1,
/// name 2, category 4 (OTHER 0, GRAPHICS 1, COMPUTE 2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedGpuRenderStageSpecification {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub category: Option<i32>,
}

/// InternedComputeKernel (`GpuInternedData` extension): iid 1, demangled_name 3.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedComputeKernel {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(string, optional, tag = "3")]
    pub demangled_name: Option<String>,
}

/// `trace/gpu/gpu_render_stage_event.proto` GpuRenderStageEvent.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuRenderStageEvent {
    /// 1: unique; trace_processor drops an event without it
    #[prost(uint64, optional, tag = "1")]
    pub event_id: Option<u64>,
    /// 2: ns
    #[prost(uint64, optional, tag = "2")]
    pub duration: Option<u64>,
    /// 11
    #[prost(int32, optional, tag = "11")]
    pub gpu_id: Option<i32>,
    /// 13: -> gpu_specifications (the lane)
    #[prost(uint64, optional, tag = "13")]
    pub hw_queue_iid: Option<u64>,
    /// 14: -> gpu_specifications (the stage)
    #[prost(uint64, optional, tag = "14")]
    pub stage_iid: Option<u64>,
    /// 5: -> graphics_contexts
    #[prost(uint64, optional, tag = "5")]
    pub context: Option<u64>,
    /// 20: -> event_names
    #[prost(uint64, optional, tag = "20")]
    pub name_iid: Option<u64>,
    /// 18: repeated uint64, unpacked
    #[prost(uint64, repeated, packed = "false", tag = "18")]
    pub event_wait_ids: Vec<u64>,
    /// 19: -> compute_kernels
    #[prost(uint64, optional, tag = "19")]
    pub kernel_iid: Option<u64>,
    /// 21
    #[prost(message, optional, tag = "21")]
    pub launch: Option<ComputeKernelLaunch>,
    /// 6
    #[prost(message, repeated, tag = "6")]
    pub extra_data: Vec<ExtraData>,
}

/// GpuRenderStageEvent.ExtraData: name 1, value 2.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtraData {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}

/// ComputeKernelLaunch: grid_size 1, workgroup_size 2, args 3.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ComputeKernelLaunch {
    #[prost(message, optional, tag = "1")]
    pub grid_size: Option<Dim3>,
    #[prost(message, optional, tag = "2")]
    pub workgroup_size: Option<Dim3>,
    #[prost(message, repeated, tag = "3")]
    pub args: Vec<ExtraComputeArg>,
}

/// Dim3: x 1, y 2, z 3 (uint32).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dim3 {
    #[prost(uint32, optional, tag = "1")]
    pub x: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    pub y: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    pub z: Option<u32>,
}

/// ExtraComputeArg: name_iid 1 (-> compute_arg_names), uint_value 4.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtraComputeArg {
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "4")]
    pub uint_value: Option<u64>,
}

/// `trace/gpu/gpu_counter_event.proto` GpuCounterEvent: counter_descriptor_iid 4,
/// counters 2.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCounterEvent {
    #[prost(uint64, optional, tag = "4")]
    pub counter_descriptor_iid: Option<u64>,
    #[prost(message, repeated, tag = "2")]
    pub counters: Vec<GpuCounter>,
}

/// GpuCounterEvent.GpuCounter: counter_id 1, int_value 2 | double_value 3.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCounter {
    #[prost(uint32, optional, tag = "1")]
    pub counter_id: Option<u32>,
    #[prost(int64, optional, tag = "2")]
    pub int_value: Option<i64>,
    #[prost(double, optional, tag = "3")]
    pub double_value: Option<f64>,
}

/// `trace/gpu/gpu_counter_event.proto` InternedGpuCounterDescriptor: iid 1,
/// counter_descriptor 2, gpu_id 3.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedGpuCounterDescriptor {
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    #[prost(message, optional, tag = "2")]
    pub counter_descriptor: Option<GpuCounterDescriptor>,
    #[prost(int32, optional, tag = "3")]
    pub gpu_id: Option<i32>,
}

/// `common/gpu_counter_descriptor.proto` GpuCounterDescriptor: specs 1, counter_groups 6.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCounterDescriptor {
    #[prost(message, repeated, tag = "1")]
    pub specs: Vec<GpuCounterSpec>,
    #[prost(message, repeated, tag = "6")]
    pub counter_groups: Vec<GpuCounterGroupSpec>,
}

/// GpuCounterDescriptor.GpuCounterSpec: counter_id 1, name 2.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCounterSpec {
    #[prost(uint32, optional, tag = "1")]
    pub counter_id: Option<u32>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// GpuCounterDescriptor.GpuCounterGroupSpec: group_id 1, counter_ids 4 (repeated uint32,
/// unpacked).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCounterGroupSpec {
    #[prost(uint32, optional, tag = "1")]
    pub group_id: Option<u32>,
    #[prost(uint32, repeated, packed = "false", tag = "4")]
    pub counter_ids: Vec<u32>,
}
