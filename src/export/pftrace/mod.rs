//! Stage `export`, Perfetto flavour: run the `pftrace_*` plans of one window and stream the
//! reference's `.pftrace` content (`_window_to_pftrace`) into the Perfetto sink.
//!
//! In: a [`Window`] with its `cpu_trace.json.gz`. Out: a gzipped protobuf trace, written
//! atomically, packets in the reference's order (spec §2): clock snapshot, track
//! descriptors, interned data, track-event slices group by group (CPU, runtime, driver,
//! overhead, sync, sync waits: each group's BEGINs, then its ENDs), render stages, counters.
//! The slices are held (their tracks, names and the sync nesting repair need them all; the
//! CPU slices, the first group, as their encoded packets, so the CPU trace goes early), and
//! so are the render stages' narrow rows (`_pftrace_render_row`: ids, times, lanes, read by
//! seven plans); render stages (joined with their other columns, read again) and counters
//! stream from their plans.

mod columns;
mod cpu;
mod render;
mod slices;
mod tracks;

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{col, SessionContext};

use self::slices::SliceRow;
use self::tracks::{Id, Tracks};
use super::{register_export, shared_rows, ExportSummary};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::perfetto::{self, Interned, PftraceWriter};
use crate::sql::EXPORT;
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

/// The plans (and the held `_pftrace_render_row`) that read the export's shared views, for
/// [`shared_rows::Readers`].
const PLANS_READING_SHARED_ROWS: [&str; 4] = [
    "_pftrace_render_row",
    "pftrace_sync",
    "pftrace_api",
    "pftrace_overhead",
];

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
    let mut profile = crate::profile::Clock::start();
    let (window, cpu_path, trace_text) = super::open_single_window(&config.window)?;
    let (doc, cpu_events) = super::parse_cpu_trace(&trace_text, &cpu_path)?;
    let ctx = super::filter::open_catalog(&window, cpu_events, &config.filter).await?;
    register_export(&ctx, doc.base_ns, doc.cpu_base_ns).await?;
    super::release_cpu_events(&ctx, &config.filter).await?;
    let base_ns = doc.base_ns;
    profile.mark("open window");
    // Each shared view's rows go once the plans below that read them are done.
    let readers = match config.filter.script {
        None => Some(shared_rows::Readers::new(&ctx, &PLANS_READING_SHARED_ROWS).await?),
        Some(_) => None,
    };
    let done = async |plan: &str| -> Result<()> {
        match &readers {
            Some(readers) => readers.done(plan).await,
            None => Ok(()),
        }
    };
    hold_render_rows(&ctx).await?;
    done("_pftrace_render_row").await?;
    profile.mark("_pftrace_render_row");
    let sync = slices::sync_rows(&ctx).await?;
    done("pftrace_sync").await?;
    profile.mark("pftrace_sync");

    // Tracks and slices, group by group, in the reference's registration order; names and
    // categories interned as the slices are made (slices, then render-stage names).
    let mut tracks = Tracks::default();
    let mut names = crate::sink::perfetto::Names::default();
    let mut interned = Interned::default();
    let mut groups: Vec<Vec<SliceRow>> = Vec::new();
    // The CPU slices are the first group written, and their names are interned as they are
    // made: their packets are encoded now, so that the CPU trace's text they borrow their
    // args from (hundreds of MB on a large window) goes before the other groups are made.
    let cpu = cpu::cpu_slices(&doc, base_ns, &mut tracks, &mut names, &mut interned);
    let cpu_packets = slices::encode_group(&cpu, &interned)
        .map_err(|e| Error::Internal(format!("encoding the CPU slices: {e}")))?;
    drop(cpu);
    let device_properties = doc.member("deviceProperties").map(str::to_string);
    drop(doc);
    drop(trace_text);
    crate::memory::return_free_memory();
    profile.mark("cpu slices");
    let (api, api_pid) = slices::api_slices(&ctx, &mut tracks, &mut names, &mut interned).await?;
    groups.extend(api);
    done("pftrace_api").await?;
    profile.mark("api slices");
    if let Some(overhead) =
        slices::overhead_slices(&ctx, &mut tracks, &mut names, &mut interned).await?
    {
        groups.push(overhead);
    }
    done("pftrace_overhead").await?;
    let (sync, stream_tracks) = slices::sync_slices(&sync, &mut tracks, &mut names, &mut interned)?;
    groups.extend(sync);
    slices::nest_track_slices(&mut groups, &stream_tracks);
    profile.mark("overhead and sync slices");

    let gfx_pid = match &tracks.first_pid {
        Some(Id::Int(p)) => *p as i32,
        _ => 0,
    };
    let render = render::prepare(&ctx, &mut interned, &mut names, gfx_pid).await?;
    profile.mark("intern render (pftrace_lane, names)");
    let counters = render::prepare_counters(&ctx, &mut interned).await?;
    profile.mark("intern counters");
    let extras =
        render::constant_extras(config, device_properties.as_deref(), &ctx, &tracks, api_pid)
            .await?;
    profile.mark("extras");

    // Write.
    let mut file = AtomicFile::create(&config.output)?;
    let io = |e| Error::io(&config.output, e);
    let packets = {
        // The writer's gzip thread owns a handle of its own on the temporary file.
        let out = file.file().try_clone().map_err(io)?;
        let mut w = PftraceWriter::try_new(out, config.compression_level)?;
        w.write(&perfetto::clock_snapshot(base_ns)).map_err(io)?;
        for t in &tracks.tracks {
            w.write(&perfetto::track_descriptor(t)).map_err(io)?;
        }
        if !interned.is_empty() {
            w.write(&perfetto::interned(&interned)).map_err(io)?;
        }
        for buffer in cpu_packets {
            w.append(buffer).map_err(io)?;
        }
        for group in &groups {
            slices::write_group(&mut w, group, &interned).map_err(io)?;
        }
        drop(groups);
        profile.mark("write slices");
        render::write_render(&ctx, &render, &extras, &mut w).await?;
        profile.mark("write pftrace_render");
        render::write_counters(&ctx, &counters, &mut w).await?;
        profile.mark("write pftrace_counter_sample");
        let packets = w.packets();
        w.finish().map_err(io)?;
        packets
    };
    file.commit()?;
    profile.mark("finish");
    Ok(ExportSummary { events: packets })
}

/// The render-stage rows every later plan reads (lanes, kernel names, launch links, the
/// stages and their waits: seven scans), and whose numbering sorts every GPU op: evaluate
/// `_pftrace_render_row` once, hold it in event_id order (which is also (stage_iid, ord)
/// order), and re-create the plans registered after it over the held rows.
async fn hold_render_rows(ctx: &SessionContext) -> Result<()> {
    const ROWS: &str = "_pftrace_render_row";
    let query = format!("SELECT * FROM {ROWS} ORDER BY event_id");
    crate::profile::explain(ROWS, async || Ok(ctx.sql(&query).await?)).await?;
    let df = ctx.sql(&query).await?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    let table = MemTable::try_new(schema, vec![batches])?.with_sort_order(vec![
        vec![col("event_id").sort(true, false)],
        vec![
            col("stage_iid").sort(true, false),
            col("ord").sort(true, false),
        ],
    ]);
    ctx.deregister_table(ROWS)?;
    ctx.register_table(ROWS, Arc::new(table))?;
    let later = EXPORT.iter().skip_while(|o| o.name != ROWS).skip(1);
    for object in later {
        ctx.sql(object.text)
            .await
            .map_err(|e| Error::Internal(format!("sql/{}: {}", object.path, Error::from(e))))?;
    }
    Ok(())
}

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}
