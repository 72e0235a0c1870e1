//! Stage `export`, Perfetto flavour: run the `pftrace_*` plans of one window and stream the
//! reference's `.pftrace` content (`_window_to_pftrace`) into the Perfetto sink.
//!
//! In: a [`Window`] with its `cpu_trace.json.gz`. Out: a gzipped protobuf trace, written
//! atomically, packets in the reference's order (spec §2): clock snapshot, track
//! descriptors, interned data, track-event slices group by group (CPU, runtime, driver,
//! overhead, sync, sync waits: each group's BEGINs, then its ENDs), render stages, counters.
//! The slices are held (their tracks, names and the sync nesting repair need them all; the
//! CPU slices, the first group, as their encoded packets on disk, so the CPU trace goes
//! early and its packets take no memory while they wait), and
//! so are the render stages' narrow rows (`_pftrace_render_row`: ids, times, lanes, read by
//! seven plans); render stages (joined with their other columns, read again) and counters
//! stream from their plans.
//!
//! [`write_window`] writes the packets into a writer it is given, renamed by a
//! [`PacketRemap`]: [`PacketRemap::NONE`] for a trace of its own ([`export_pftrace`]), a
//! window's place for a merged trace (`merge_pftrace.rs`, every window into one writer).

mod columns;
mod cpu;
mod critical;
mod render;
mod slices;
mod tracks;

use std::path::PathBuf;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::prelude::SessionContext;

use self::slices::SliceRow;
use self::tracks::{Id, Tracks};
use super::session::{ExportSession, TraceBase};
use super::{manifest, shared_rows, ExportSummary};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::perfetto::{self, Interned, PacketRemap, PacketSpill, PftraceWriter};
use crate::Result;

/// What to export and where, with the trace-wide extras the GPU panels read.
#[derive(Clone, Debug, Default)]
pub struct PftraceConfig {
    pub window: PathBuf,
    pub output: PathBuf,
    /// gzip level, 0-9 (the reference's default is 1)
    pub compression_level: u32,
    /// "arch" extra (`sm_XY`); default from the CPU trace's deviceProperties
    pub arch: Option<String>,
    /// "process_id" extra; default the API calls' process
    pub process_id: Option<i64>,
    /// "process_name" extra; default that process's name in the CPU trace, else "python"
    pub process_name: Option<String>,
    /// what to keep of the window (everything by default)
    pub filter: super::RowFilter,
}

/// Export the window at `config.window` as a `.pftrace` at `config.output`.
pub async fn export_pftrace(config: &PftraceConfig) -> Result<ExportSummary> {
    if config.compression_level > 9 {
        return Err(Error::Usage(format!(
            "--compression-level {} is out of range (0-9)",
            config.compression_level
        )));
    }
    super::refuse_writing_into_inputs(&config.window, &config.output, &config.filter)?;
    write_pftrace(config)
        .await
        .map_err(|e| e.at_output(&config.output))
}

async fn write_pftrace(config: &PftraceConfig) -> Result<ExportSummary> {
    let mut file = AtomicFile::create(&config.output)?;
    // The writer's gzip thread owns a handle of its own on the temporary file.
    let out = (file.file().try_clone()).map_err(|e| Error::io(&config.output, e))?;
    let mut w = PftraceWriter::try_new(out, config.compression_level)?;
    write_window(config, &mut w, &PacketRemap::NONE).await?;
    let started = crate::profile::Clock::start();
    let summary = ExportSummary {
        events: w.packets(),
        bytes: Some(w.uncompressed_bytes()),
    };
    w.finish().map_err(Error::Write)?;
    file.commit()?;
    started.report("finish");
    Ok(summary)
}

/// The packets of the window at `config.window` (narrowed by `config.filter`), renamed and
/// shifted by `remap`, written into `w` in the reference's order. The window's session and
/// everything read from it are gone when this returns. `config.output` is not written.
pub(crate) async fn write_window(
    config: &PftraceConfig,
    w: &mut PftraceWriter,
    remap: &PacketRemap,
) -> Result<()> {
    let mut profile = crate::profile::Clock::start();
    let (window, cpu_path, trace_text) = super::open_single_window(&config.window)?;
    let (doc, cpu_events) = crate::catalog::cpu_trace::read_cpu_trace(&trace_text, &cpu_path)?;
    let base = TraceBase {
        base_ns: doc.base_ns,
        cpu_base_ns: doc.cpu_base_ns,
    };
    let session = ExportSession::open(&window, cpu_events, &config.filter, base).await?;
    let ctx = &session.ctx;
    let cpu_rows = collect(
        ctx,
        "SELECT raw FROM pftrace_cpu_event ORDER BY event_index",
    )
    .await?;
    session.release_cpu_events(&config.filter).await?;
    let base_ns = doc.base_ns;
    profile.mark("open window");
    // Each shared view's rows go once the plans below that read them are done (a --sql
    // script's views may read any of them at any time: then all are kept).
    let readers = match config.filter.script {
        None => {
            let mut plans = manifest::pftrace_plans();
            plans.retain(|p| manifest::held(p).is_none());
            Some(shared_rows::Readers::new(ctx, &plans).await?)
        }
        Some(_) => None,
    };
    let done = async |plan: &str| -> Result<()> {
        match &readers {
            Some(readers) => readers.done(plan).await,
            None => Ok(()),
        }
    };
    // Tracks and slices, group by group, in the reference's registration order; names and
    // categories interned as the slices are made (slices, then render-stage names).
    let mut tracks = Tracks::default();
    let mut names = crate::sink::perfetto::Names::default();
    let mut interned = Interned::default();
    let mut groups: Vec<Vec<SliceRow>> = Vec::new();
    // The CPU slices are the first group written, and their names are interned as they are
    // made: their packets are encoded now, so that the CPU trace's text they borrow their
    // args from (hundreds of MB on a large window) goes before the other groups are made.
    let cpu_events: Vec<&str> = (cpu_rows.iter())
        .flat_map(|b| b.column(0).as_string_view().iter().flatten())
        .collect();
    let cpu = cpu::cpu_slices(&cpu_events, base_ns, &mut tracks, &mut names, &mut interned);
    let cpu_packets = slices::encode_group(&cpu, &interned, remap)
        .map_err(|e| Error::Internal(format!("encoding the CPU slices: {e}")))?;
    drop(cpu);
    // They wait on disk for their turn, after the interned data (src/sink/perfetto/spill.rs),
    // beside the output: failing there (a full disk) is failing to write the output.
    let dir = crate::file::folder_of(&config.output);
    let mut cpu_spill = PacketSpill::new_in(dir).map_err(Error::Write)?;
    for buffer in cpu_packets {
        cpu_spill.push(buffer).map_err(Error::Write)?;
    }
    drop(cpu_events);
    drop(cpu_rows);
    let device_properties = doc.member("deviceProperties").map(str::to_string);
    drop(doc);
    drop(trace_text);
    crate::memory::return_free_memory();
    profile.mark("cpu slices");
    // The render rows are read by seven scans, and their numbering sorts every GPU op:
    // computed once, here, before the other slices. After the CPU slices, so that the CPU
    // trace is gone by then (10 M-event peak 1840-1845 -> 1653-1664 MB).
    ctx.table("_pftrace_render_row").await?.count().await?;
    profile.mark("_pftrace_render_row");
    let sync = slices::sync_rows(ctx).await?;
    done("pftrace_sync").await?;
    profile.mark("pftrace_sync");
    let (api, api_pid) = slices::api_slices(ctx, &mut tracks, &mut names, &mut interned).await?;
    groups.extend(api);
    done("pftrace_api").await?;
    profile.mark("api slices");
    if let Some(overhead) =
        slices::overhead_slices(ctx, &mut tracks, &mut names, &mut interned).await?
    {
        groups.push(overhead);
    }
    done("pftrace_overhead").await?;
    let (sync, stream_tracks) = slices::sync_slices(&sync, &mut tracks, &mut names, &mut interned)?;
    groups.extend(sync);
    slices::nest_track_slices(&mut groups, &stream_tracks);
    let path = critical::critical_path_slices(ctx, &mut tracks, &mut names, &mut interned).await?;
    profile.mark("overhead and sync slices");

    let gfx_pid = match &tracks.first_pid {
        Some(Id::Int(p)) => *p as i32,
        _ => 0,
    };
    let render = render::prepare(&session, &mut interned, &mut names, gfx_pid).await?;
    profile.mark("intern render (pftrace_lane, names)");
    let counters = render::prepare_counters(ctx, &mut interned).await?;
    profile.mark("intern counters");
    let extras =
        render::constant_extras(config, device_properties.as_deref(), ctx, &tracks, api_pid)
            .await?;
    profile.mark("extras");

    // Write.
    let io = Error::Write;
    w.write(&perfetto::clock_snapshot(base_ns, remap))
        .map_err(io)?;
    for t in &tracks.tracks {
        w.write(&perfetto::track_descriptor(t, remap)).map_err(io)?;
    }
    if !interned.is_empty() {
        w.write(&perfetto::interned(&interned, remap)).map_err(io)?;
    }
    cpu_spill.write_into(w).map_err(io)?;
    for group in &groups {
        slices::write_group(w, group, &interned, remap).map_err(io)?;
    }
    drop(groups);
    if let Some(path) = &path {
        critical::write_in_turn(w, path, &interned, remap).map_err(io)?;
    }
    profile.mark("write slices");
    render::write_render(ctx, &render, &extras, w, remap).await?;
    for plan in ["pftrace_lane", "pftrace_render", "_pftrace_render_extra"] {
        done(plan).await?;
    }
    profile.mark("write pftrace_render");
    render::write_counters(ctx, &counters, w, remap).await?;
    for plan in ["_pftrace_counter_source", "pftrace_counter_sample"] {
        done(plan).await?;
    }
    profile.mark("write pftrace_counter_sample");
    Ok(())
}

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}
