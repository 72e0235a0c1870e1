//! The GPU half of the .pftrace export: render stages (pftrace_render, pftrace_lane) and
//! counter samples (pftrace_counter_sample), their interned tables, and the trace-wide
//! extras; both stream from their plans into the sink.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, RecordBatch};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use serde_json::Value;

use super::columns::{int, ints, ordered_id_lists, text, texts};
use super::tracks::{Id, Tracks};
use super::{collect, PftraceConfig};
use crate::error::Error;
use crate::export::session::ExportSession;
use crate::sink::perfetto::{
    self, CounterDescriptor, Interned, Names, PacketRemap, Packets, PftraceWriter, RenderStage,
    StageSpread,
};
use crate::Result;

/// The render stages (iid, name, category): Kernel is COMPUTE (2), the rest OTHER.
const STAGES: &[(u64, &str, i32)] = &[
    (1, "Kernel", 2),
    (2, "Memcpy", 0),
    (3, "Memset", 0),
    (4, "Annotation", 0),
    (5, "EventRecord", 0),
    (6, "HostNode", 0),
];

/// ComputeKernelLaunch argument names (InternedComputeArgName iid = index + 1).
const ARG_NAMES: &[&str] = &["registers_per_thread", "shared_mem_dynamic", "thread_count"];

/// What the render rows need from interning.
pub struct RenderTables {
    present: bool,
    /// name -> (event name iid, compute kernel iid); kernel names are long, and looked up
    /// once per render stage: a fast hash
    names: HashMap<String, (u64, u64), foldhash::fast::RandomState>,
}

/// Intern the render stages' tables: stage and lane specs, the graphics context, compute
/// kernels and their names (appended to the event names), the launch argument names.
pub async fn prepare(
    session: &ExportSession,
    interned: &mut Interned,
    names: &mut Names,
    gfx_pid: i32,
) -> Result<RenderTables> {
    let ctx = &session.ctx;
    let lanes = collect(
        ctx,
        "SELECT iid, lane, lane_name FROM pftrace_lane ORDER BY iid",
    )
    .await?;
    let mut lane_rows = Vec::new();
    let mut hw_queues = HashMap::new();
    for batch in &lanes {
        let (iid, lane, name) = (
            ints(batch, "iid")?,
            ints(batch, "lane")?,
            texts(batch, "lane_name")?,
        );
        for i in 0..batch.num_rows() {
            hw_queues.insert(lane.is_valid(i).then(|| lane.value(i)), iid.value(i));
            lane_rows.push((
                int(&iid, i) as u64,
                int(&lane, i),
                text(&name, i).map(str::to_string),
            ));
        }
    }
    // pftrace_render reads the lanes' iids through pftrace_hw_queue.
    session.give_hw_queues(hw_queues);
    let mut tables = RenderTables {
        present: !lane_rows.is_empty(),
        names: HashMap::default(),
    };
    if !tables.present {
        return Ok(tables);
    }
    let width = lane_rows
        .iter()
        .map(|(_, lane, _)| *lane)
        .max()
        .map_or(1, |m| m.to_string().len());
    interned.gpu_specs = STAGES
        .iter()
        .map(|(iid, name, cat)| (*iid, name.to_string(), *cat))
        .collect();
    for (iid, lane, name) in lane_rows {
        let label = name.unwrap_or_else(|| format!("stream {lane}"));
        interned
            .gpu_specs
            .push((iid, format!("[{lane:0width$}] {label}"), 0));
    }
    interned.graphics_pid = Some(gfx_pid);
    let kernel_names = collect(
        ctx,
        "SELECT name FROM _pftrace_render_row WHERE name IS NOT NULL AND name <> '' \
         GROUP BY name ORDER BY min(event_id)",
    )
    .await?;
    for batch in &kernel_names {
        let col = texts(batch, "name")?;
        for i in 0..batch.num_rows() {
            let name = text(&col, i).unwrap_or_default().to_string();
            interned.compute_kernels.push(name.clone());
            let kernel = interned.compute_kernels.len() as u64;
            let event = names.event(&name, &mut interned.event_names);
            tables.names.insert(name, (event, kernel));
        }
    }
    interned.compute_arg_names = ARG_NAMES.iter().map(|s| s.to_string()).collect();
    Ok(tables)
}

/// The trace-wide extras on every render stage: arch (`--arch`, else the first render row's
/// device in the CPU trace's deviceProperties), process id and process name.
pub async fn constant_extras(
    config: &PftraceConfig,
    device_properties: Option<&str>,
    ctx: &SessionContext,
    tracks: &Tracks,
    api_pid: Option<i64>,
) -> Result<Vec<(&'static str, String)>> {
    let mut out = Vec::new();
    let arch = match &config.arch {
        Some(a) => Some(a.clone()),
        None => {
            let first = collect(
                ctx,
                "SELECT device_id FROM _pftrace_render_row ORDER BY event_id LIMIT 1",
            )
            .await?;
            let device = first
                .iter()
                .find(|b| b.num_rows() > 0)
                .map(|b| ints(b, "device_id").map(|c| int(&c, 0)))
                .transpose()?
                .unwrap_or(0);
            device_properties.and_then(|p| device_arch(p, device))
        }
    };
    if let Some(arch) = arch {
        out.push(("arch", arch));
    }
    let pid = config
        .process_id
        .or(api_pid)
        .unwrap_or(std::process::id() as i64);
    out.push(("process_id", pid.to_string()));
    let name = config.process_name.clone().unwrap_or_else(|| {
        tracks
            .process_names
            .get(&Id::Int(pid))
            .filter(|n| !n.is_empty())
            .cloned()
            .unwrap_or_else(|| "python".into())
    });
    out.push(("process_name", name));
    Ok(out)
}

/// `sm_<major><minor>` of `device` from the Kineto trace's `deviceProperties` (JSON text).
fn device_arch(device_properties: &str, device: i64) -> Option<String> {
    let props: Value = serde_json::from_str(device_properties).ok()?;
    let dev = props
        .as_array()?
        .iter()
        .find(|d| d.get("id").and_then(Value::as_i64) == Some(device))?;
    let major = dev.get("computeMajor")?.as_i64()?;
    let minor = dev.get("computeMinor")?.as_i64()?;
    Some(format!("sm_{major}{minor}"))
}

/// pftrace_render's rows with their `_pftrace_render_extra` columns, in event_id order: the
/// engine's merge join of the two on (stage_iid, ord), both in that order (`ord` is the
/// row's place in its file, `file_row`, counted by the scan, so both reads agree on it
/// whatever order a view gives the rows in). The start time is a key too (rows in
/// (stage_iid, ord) order, a unique pair, are in key order with it): a row without its
/// extras fails the export in [`check_extras`] rather than being written without them.
async fn render_with_extras(ctx: &SessionContext) -> Result<(SendableRecordBatchStream, usize)> {
    crate::engine::left_merge_join(
        ctx,
        &in_stage_order("pftrace_render"),
        &in_stage_order("_pftrace_render_extra"),
        &["stage_iid", "ord", "ts"],
    )
    .await
}

/// The rows of `view` in (stage_iid, ord) order, event_id order.
fn in_stage_order(view: &str) -> String {
    format!("SELECT * FROM {view} ORDER BY stage_iid, ord")
}

/// Fail on a joined render row without its extras (see [`render_with_extras`]): the
/// extras' first column, their stage, is NULL there.
fn check_extras(batch: &RecordBatch, narrow_width: usize) -> Result<()> {
    if batch.column(narrow_width).null_count() > 0 {
        return Err(Error::Internal(
            "a GPU-op table gave other rows when read again for the render stages' columns".into(),
        ));
    }
    Ok(())
}

/// Stream pftrace_render into `w`, one GpuRenderStageEvent per row, renamed by `remap`.
pub async fn write_render(
    ctx: &SessionContext,
    tables: &RenderTables,
    extras: &[(&'static str, String)],
    w: &mut PftraceWriter,
    remap: &PacketRemap,
) -> Result<()> {
    if !tables.present {
        return Ok(());
    }
    let constant: Vec<(&str, &str)> = extras.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The engine's export session builds hash joins on one side (the narrow one), so they
    // keep the order of the other (the held render rows, in event_id order) and the ORDER BY
    // sorts nothing.
    crate::profile::explain("pftrace_render", async || {
        Ok(ctx.sql(&in_stage_order("pftrace_render")).await?)
    })
    .await?;
    let (mut stream, narrow_width) = render_with_extras(ctx).await?;
    const SKIP_ZERO: &[(&str, &str)] = &[
        ("correlation", "correlation_id"),
        ("priority", "priority"),
        ("queued", "queued"),
        ("channel", "channel"),
        ("channel_type", "channel_type"),
        ("graph id", "graph_id"),
        ("graph node id", "graph_node_id_low"),
        ("bytes", "bytes"),
        ("value", "value"),
        ("memory kind", "memory_kind"),
    ];
    // The time spent waiting for the plan's rows, apart from encoding them.
    let mut waited = std::time::Duration::ZERO;
    loop {
        let asked = std::time::Instant::now();
        let Some(batch) = stream.next().await else {
            break;
        };
        waited += asked.elapsed();
        let batch = batch?;
        check_extras(&batch, narrow_width)?;
        let c = |n: &str| ints(&batch, n);
        let (event_id, stage, ts, dur) = (c("event_id")?, c("stage_iid")?, c("ts")?, c("dur")?);
        let (device, hw, context, stream_id) = (
            c("device_id")?,
            c("hw_queue_iid")?,
            c("context_id")?,
            c("stream_id")?,
        );
        let dims: Vec<_> = [
            "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
        ]
        .iter()
        .map(|n| c(n))
        .collect::<Result<_>>()?;
        let (regs, shared) = (c("registers_per_thread")?, c("dynamic_shared_memory")?);
        let skip: Vec<_> = SKIP_ZERO
            .iter()
            .map(|(k, col)| c(col).map(|a| (*k, a)))
            .collect::<Result<_>>()?;
        let names = texts(&batch, "name")?;
        let (annotation, metadata, host_fn) = (
            texts(&batch, "annotation")?,
            texts(&batch, "metadata")?,
            texts(&batch, "host_fn")?,
        );
        let host_fn_addr = c("host_fn_addr")?;
        let waits = ordered_id_lists(&batch, "waits")?;
        let mut numeric = Vec::with_capacity(3 + skip.len());
        for (i, waits) in waits.iter().enumerate() {
            let (name_iid, kernel_iid) = text(&names, i)
                .and_then(|n| tables.names.get(n))
                .copied()
                .unwrap_or((0, 0));
            let d: [i64; 6] = std::array::from_fn(|k| int(&dims[k], i));
            let launch = (d[0] > 0).then_some(([d[0], d[1], d[2]], [d[3], d[4], d[5]]));
            let args = [
                (1, int(&regs, i)),
                (2, int(&shared, i)),
                (3, d[3] * d[4] * d[5]),
            ];
            numeric.clear();
            numeric.extend([
                ("device id", int(&device, i)),
                ("context id", int(&context, i)),
                ("stream id", int(&stream_id, i)),
            ]);
            numeric.extend(
                skip.iter()
                    .map(|(k, a)| (*k, int(a, i)))
                    .filter(|(_, v)| *v != 0),
            );
            let stage = RenderStage {
                ts: int(&ts, i),
                event_id: int(&event_id, i) as u64,
                duration: int(&dur, i),
                gpu_id: int(&device, i),
                hw_queue_iid: int(&hw, i) as u64,
                stage_iid: int(&stage, i) as u64,
                name_iid,
                waits,
                launch,
                kernel_iid,
                launch_args: &args,
                numeric: &numeric,
                constant: &constant,
                spread: StageSpread {
                    annotation: text(&annotation, i),
                    metadata: text(&metadata, i),
                    host_fn: text(&host_fn, i),
                    host_fn_addr: int(&host_fn_addr, i),
                },
            };
            w.packet(|p| perfetto::render_stage(p, &stage, remap))
                .map_err(Error::Write)?;
        }
    }
    crate::profile::note(&format!(
        "pftrace_render: {:.3} s waiting for rows",
        waited.as_secs_f64()
    ));
    Ok(())
}

/// What the counter samples need from interning: each GPU's descriptor iid.
pub struct CounterTables {
    iid_of_gpu: HashMap<i64, u64>,
}

/// Intern the counter descriptors: one per GPU (iid by first sample, written in gpu order),
/// each with every spec and the COMPUTE group. One aggregate over the unnumbered samples
/// gives both: each (spec, device)'s first sample in the merged order.
pub async fn prepare_counters(
    ctx: &SessionContext,
    interned: &mut Interned,
) -> Result<CounterTables> {
    let groups = collect(
        ctx,
        "SELECT src, spec, name, device_id, min(ord) AS first FROM _pftrace_counter_source \
         GROUP BY src, spec, name, device_id",
    )
    .await?;
    // (src, spec, name, device, first ord)
    let mut rows = Vec::new();
    for batch in &groups {
        let (src, spec, name) = (
            ints(batch, "src")?,
            ints(batch, "spec")?,
            texts(batch, "name")?,
        );
        let (device, first) = (ints(batch, "device_id")?, ints(batch, "first")?);
        for i in 0..batch.num_rows() {
            let name = text(&name, i).unwrap_or_default().to_string();
            rows.push((
                int(&src, i),
                int(&spec, i),
                name,
                int(&device, i),
                int(&first, i),
            ));
        }
    }
    rows.sort_unstable();
    // Counter ids number the (src, spec) pairs in order; one spec per name of a pair.
    let mut counter_id = -1i64;
    for (i, (src, spec, name, _, _)) in rows.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| &rows[p]);
        if previous.is_none_or(|p| (p.0, p.1) != (*src, *spec)) {
            counter_id += 1;
        }
        if previous.is_none_or(|p| (p.0, p.1, &p.2) != (*src, *spec, name)) {
            interned
                .counter_specs
                .push((counter_id as u32, name.clone()));
            if *src == 2 {
                interned.compute_group.push(counter_id as u32);
            }
        }
    }
    // Each GPU's first sample in the merged order (src, spec, ord) numbers its descriptor.
    let mut first_of_gpu: HashMap<i64, (i64, i64, i64)> = HashMap::new();
    for (src, spec, _, device, first) in &rows {
        let at = (*src, *spec, *first);
        first_of_gpu
            .entry(*device)
            .and_modify(|f| *f = (*f).min(at))
            .or_insert(at);
    }
    let mut by_first: Vec<_> = first_of_gpu.into_iter().map(|(g, f)| (f, g)).collect();
    by_first.sort_unstable();
    let iid_of_gpu: HashMap<i64, u64> = (1..).zip(by_first).map(|(iid, (_, g))| (g, iid)).collect();
    let mut descriptors: Vec<_> = iid_of_gpu.iter().map(|(g, iid)| (*g, *iid)).collect();
    descriptors.sort_unstable();
    interned.counter_descriptors = descriptors
        .into_iter()
        .map(|(gpu, iid)| CounterDescriptor {
            iid,
            gpu_id: gpu as i32,
        })
        .collect();
    Ok(CounterTables { iid_of_gpu })
}

/// Stream pftrace_counter_sample into `w`, one GpuCounterEvent per sample, renamed by
/// `remap`.
pub async fn write_counters(
    ctx: &SessionContext,
    tables: &CounterTables,
    w: &mut PftraceWriter,
    remap: &PacketRemap,
) -> Result<()> {
    let mut stream = ctx
        .sql("SELECT * FROM pftrace_counter_sample ORDER BY pos")
        .await?
        .execute_stream()
        .await?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let (ts, dev, id) = (
            ints(&batch, "start_ns")?,
            ints(&batch, "device_id")?,
            ints(&batch, "counter_id")?,
        );
        let value = datafusion::arrow::compute::cast(
            batch
                .column_by_name("value")
                .ok_or_else(|| Error::Internal("pftrace_counter_sample has no value".into()))?,
            &datafusion::arrow::datatypes::DataType::Float64,
        )?;
        let value = datafusion::arrow::array::AsArray::as_primitive::<
            datafusion::arrow::datatypes::Float64Type,
        >(&value);
        let compute = super::columns::bools(&batch, "is_compute")?;
        for (i, is_int) in compute.into_iter().enumerate() {
            let v = if datafusion::arrow::array::Array::is_null(value, i) {
                f64::NAN
            } else {
                value.value(i)
            };
            let (ts, gpu, id) = (int(&ts, i), tables.iid_of_gpu[&int(&dev, i)], int(&id, i));
            w.packet(|p| perfetto::counter_sample(p, ts, gpu, id as u32, v, is_int, remap))
                .map_err(Error::Write)?;
        }
    }
    Ok(())
}
