//! Stage `export`, Perfetto flavour: run the `pftrace_*` plans of one window and stream the
//! reference's `.pftrace` content (`_window_to_pftrace`) into the Perfetto sink.
//!
//! In: a [`Window`] with its `cpu_trace.json.gz`. Out: a gzipped protobuf trace, written
//! atomically, packets in the reference's order (spec §2): clock snapshot, track
//! descriptors, interned data, track-event slices group by group (CPU, runtime, driver,
//! overhead, sync, sync waits: each group's BEGINs, then its ENDs), render stages, counters.
//! The slices are held (their tracks, names and the sync nesting repair need them all), and
//! so are the render-stage rows (`_pftrace_render_row`, read by seven plans); render stages
//! and counters stream from their plans.

mod columns;
mod cpu;
mod render;
mod tracks;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::{col, SessionContext};

use self::columns::{id_lists, int, ints, text, texts};
use self::tracks::{Id, Tracks};
use super::{register_export, ExportSummary};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::perfetto::{self, Interned, PftraceWriter, Slice};
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

/// One track-event slice of a group.
struct SliceRow<'a> {
    ts: i64,
    end: i64,
    uuid: u64,
    name: String,
    category: Option<String>,
    ints: Vec<(&'static str, i64)>,
    sync_kind: Option<String>,
    json: Option<&'a str>,
    gpu_correlation: Vec<u64>,
}

/// Export the window at `config.window` as a `.pftrace` at `config.output`.
pub async fn export_pftrace(config: &PftraceConfig) -> Result<ExportSummary> {
    if config.compression_level > 9 {
        return Err(Error::Usage(format!(
            "--compression-level {} is out of range (0-9)",
            config.compression_level
        )));
    }
    let mut profile = crate::profile::Clock::start();
    let (window, cpu_path, trace_text) = super::open_single_window(&config.window)?;
    let (doc, cpu_events) = super::parse_cpu_trace(&trace_text, &cpu_path)?;
    let ctx = super::filter::open_catalog(&window, cpu_events, &config.filter).await?;
    register_export(&ctx, doc.base_ns, doc.cpu_base_ns).await?;
    super::release_cpu_events(&ctx, &config.filter).await?;
    let base_ns = doc.base_ns;
    profile.mark("open window");
    hold_render_rows(&ctx).await?;
    profile.mark("_pftrace_render_row");

    // Tracks and slices, group by group, in the reference's registration order.
    let mut tracks = Tracks::default();
    let mut groups: Vec<Vec<SliceRow>> = Vec::new();
    let cpu = cpu::cpu_slices(&doc, base_ns, &mut tracks);
    if !cpu.is_empty() {
        groups.push(
            cpu.into_iter()
                .map(|c| SliceRow {
                    ts: c.ts,
                    end: c.end,
                    uuid: c.uuid,
                    name: c.name,
                    category: (!c.cat.is_empty()).then_some(c.cat),
                    ints: Vec::new(),
                    sync_kind: None,
                    json: c.args,
                    gpu_correlation: Vec::new(),
                })
                .collect(),
        );
    }

    profile.mark("cpu slices");
    let api = collect(&ctx, "SELECT * FROM pftrace_api ORDER BY pos").await?;
    profile.mark("pftrace_api");
    let mut api_pid = None;
    for cat in ["cuda_runtime", "cuda_driver"] {
        let mut rows = Vec::new();
        let mut pairs = Vec::new();
        for batch in &api {
            let (cats, names) = (texts(batch, "cat")?, texts(batch, "name")?);
            let (pid, tid) = (ints(batch, "process_id")?, ints(batch, "tid")?);
            let (start, end) = (ints(batch, "start_ns")?, ints(batch, "end_ns")?);
            let (cbid, corr) = (ints(batch, "cbid")?, ints(batch, "correlation_id")?);
            let links = id_lists(batch, "gpu_correlation")?;
            for (i, mut link) in links.into_iter().enumerate() {
                if text(&cats, i) != Some(cat) {
                    continue;
                }
                link.sort_unstable();
                api_pid.get_or_insert(int(&pid, i));
                pairs.push((int(&pid, i), int(&tid, i)));
                rows.push(SliceRow {
                    ts: int(&start, i),
                    end: int(&end, i),
                    uuid: 0,
                    name: text(&names, i).unwrap_or_default().to_string(),
                    category: Some(cat.to_string()),
                    ints: vec![("cbid", int(&cbid, i)), ("correlation", int(&corr, i))],
                    sync_kind: None,
                    json: None,
                    gpu_correlation: link,
                });
            }
        }
        if rows.is_empty() {
            continue;
        }
        let uuids = tracks.threads_packed(&pairs, "process {}", "thread {}");
        for (row, uuid) in rows.iter_mut().zip(uuids) {
            row.uuid = uuid;
        }
        groups.push(rows);
    }

    // Batches are dropped once their rows are taken, slices once written: a 10 M-event
    // window's are GBs, and the render stages that follow need the room.
    drop(api);
    profile.mark("api slices");
    let overhead = collect(&ctx, "SELECT * FROM pftrace_overhead ORDER BY ord").await?;
    profile.mark("pftrace_overhead");
    if overhead.iter().any(|b| b.num_rows() > 0) {
        let uuid = tracks.thread(&Id::Int(-1), &Id::Int(0), "Overhead", "Overhead");
        let mut rows = Vec::new();
        for batch in &overhead {
            let names = texts(batch, "name")?;
            let (start, end) = (ints(batch, "start_ns")?, ints(batch, "end_ns")?);
            for i in 0..batch.num_rows() {
                rows.push(SliceRow {
                    ts: int(&start, i),
                    end: int(&end, i),
                    uuid,
                    name: text(&names, i).unwrap_or_default().to_string(),
                    category: None,
                    ints: Vec::new(),
                    sync_kind: None,
                    json: None,
                    gpu_correlation: Vec::new(),
                });
            }
        }
        groups.push(rows);
    }

    drop(overhead);
    let sync = collect(&ctx, "SELECT * FROM pftrace_sync ORDER BY ord").await?;
    profile.mark("pftrace_sync");
    let mut stream_tracks = HashSet::new();
    for wait in [false, true] {
        let mut rows = Vec::new();
        let mut pairs = Vec::new();
        for batch in &sync {
            let waits = columns::bools(batch, "wait")?;
            let kind = texts(batch, "kind_name")?;
            let (start, end) = (ints(batch, "start_ns")?, ints(batch, "end_ns")?);
            let (device, stream) = (ints(batch, "device_id")?, ints(batch, "stream")?);
            let (corr, context) = (ints(batch, "correlation_id")?, ints(batch, "context_id")?);
            let (event, record) = (
                ints(batch, "cuda_event_id")?,
                ints(batch, "record_correlation_id")?,
            );
            for (i, w) in waits.into_iter().enumerate() {
                if w != wait {
                    continue;
                }
                pairs.push((int(&device, i), int(&stream, i)));
                let mut annotations = vec![
                    ("stream", int(&stream, i)),
                    ("correlation", int(&corr, i)),
                    ("device", int(&device, i)),
                    ("context", int(&context, i)),
                ];
                if wait {
                    annotations.extend([
                        ("wait_on_stream", -1),
                        ("wait_on_cuda_event_id", int(&event, i)),
                        ("wait_on_cuda_event_record_corr_id", int(&record, i)),
                    ]);
                }
                let name = text(&kind, i).unwrap_or_default().to_string();
                rows.push(SliceRow {
                    ts: int(&start, i),
                    end: int(&end, i),
                    uuid: 0,
                    sync_kind: Some(name.clone()),
                    name,
                    category: None,
                    ints: annotations,
                    json: None,
                    gpu_correlation: Vec::new(),
                });
            }
        }
        if rows.is_empty() {
            continue;
        }
        let uuids = tracks.threads_packed(&pairs, "GPU {}", "stream {}");
        for (row, uuid) in rows.iter_mut().zip(uuids) {
            row.uuid = uuid;
            stream_tracks.insert(uuid);
        }
        groups.push(rows);
    }
    drop(sync);
    nest_track_slices(&mut groups, &stream_tracks);
    profile.mark("sync slices");

    // Interning: one name table (slices, then render-stage names), one category table.
    let mut name_iid: HashMap<String, u64> = HashMap::new();
    let mut interned = Interned::default();
    let mut category_iid: HashMap<String, u64> = HashMap::new();
    let mut intern = |name: &str, table: &mut Vec<String>| -> u64 {
        if let Some(iid) = name_iid.get(name) {
            return *iid;
        }
        table.push(name.to_string());
        let iid = table.len() as u64;
        name_iid.insert(name.to_string(), iid);
        iid
    };
    let mut slice_iids: Vec<Vec<(u64, u64)>> = Vec::with_capacity(groups.len());
    for g in &groups {
        let mut ids = Vec::with_capacity(g.len());
        for row in g {
            let n = intern(&row.name, &mut interned.event_names);
            let c = match &row.category {
                None => 0,
                Some(cat) => match category_iid.get(cat) {
                    Some(iid) => *iid,
                    None => {
                        interned.categories.push(cat.to_string());
                        let iid = interned.categories.len() as u64;
                        category_iid.insert(cat.clone(), iid);
                        iid
                    }
                },
            };
            ids.push((n, c));
        }
        slice_iids.push(ids);
    }
    profile.mark("intern slices");
    let gfx_pid = match &tracks.first_pid {
        Some(Id::Int(p)) => *p as i32,
        _ => 0,
    };
    let render = render::prepare(&ctx, &mut interned, &mut intern, gfx_pid).await?;
    profile.mark("intern render (pftrace_lane, names)");
    let counters = render::prepare_counters(&ctx, &mut interned).await?;
    profile.mark("intern counters");
    let extras = render::constant_extras(config, &doc, &ctx, &tracks, api_pid).await?;
    profile.mark("extras");

    // Write.
    let mut file = AtomicFile::create(&config.output)?;
    let io = |e| Error::io(&config.output, e);
    let packets = {
        let mut buffered = file.writer();
        let mut w = PftraceWriter::try_new(&mut buffered, config.compression_level)?;
        w.write(&perfetto::clock_snapshot(base_ns)).map_err(io)?;
        for t in &tracks.tracks {
            w.write(&perfetto::track_descriptor(t)).map_err(io)?;
        }
        if !interned.is_empty() {
            w.write(&perfetto::interned(&interned)).map_err(io)?;
        }
        for (g, ids) in groups.iter().zip(&slice_iids) {
            for (row, (n, c)) in g.iter().zip(ids) {
                let strs: Vec<(&str, &str)> = row
                    .sync_kind
                    .as_deref()
                    .map(|k| ("cuda_sync_kind", k))
                    .into_iter()
                    .collect();
                let packet = perfetto::slice_begin(&Slice {
                    ts: row.ts,
                    track_uuid: row.uuid,
                    name_iid: *n,
                    category_iid: *c,
                    gpu_correlation: &row.gpu_correlation,
                    ints: &row.ints,
                    strs: &strs,
                    json: row.json,
                });
                w.write(&packet).map_err(io)?;
            }
            for row in g {
                w.write(&perfetto::slice_end(row.end, row.uuid))
                    .map_err(io)?;
            }
        }
        drop(groups);
        drop(slice_iids);
        // The CPU slices borrowed their args from the CPU trace's text: with them written,
        // the text (hundreds of MB on a large window) goes before the render stages.
        drop(doc);
        drop(trace_text);
        profile.mark("write slices");
        render::write_render(&ctx, &render, &extras, &mut w).await?;
        profile.mark("write pftrace_render");
        render::write_counters(&ctx, &counters, &mut w).await?;
        profile.mark("write pftrace_counter_sample");
        let packets = w.packets();
        w.finish().map_err(io)?;
        buffered.flush().map_err(io)?;
        packets
    };
    file.commit()?;
    profile.mark("finish");
    Ok(ExportSummary { events: packets })
}

/// Make each GPU-stream track's slices nest (Perfetto pairs BEGIN/END per track with a
/// stack): per track, in (start, end descending) order, an open slice that a later slice
/// outlasts is cut at that slice's start. Only ends change.
fn nest_track_slices(groups: &mut [Vec<SliceRow>], stream_tracks: &HashSet<u64>) {
    if stream_tracks.is_empty() {
        return;
    }
    let mut idx: Vec<(usize, usize)> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        for (ri, row) in g.iter().enumerate() {
            if stream_tracks.contains(&row.uuid) {
                idx.push((gi, ri));
            }
        }
    }
    let key = |&(g, r): &(usize, usize)| {
        let row = &groups[g][r];
        (row.uuid, row.ts, std::cmp::Reverse(row.end))
    };
    idx.sort_by_key(key);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let mut prev = None;
    for &(g, r) in &idx {
        let (uuid, ts, end) = {
            let row = &groups[g][r];
            (row.uuid, row.ts, row.end)
        };
        if prev != Some(uuid) {
            stack.clear();
            prev = Some(uuid);
        }
        while let Some(&(pg, pr)) = stack.last() {
            let p_end = groups[pg][pr].end;
            if p_end <= ts {
                stack.pop();
            } else if p_end < end {
                groups[pg][pr].end = ts;
                stack.pop();
            } else {
                break;
            }
        }
        stack.push((g, r));
    }
}

/// The render-stage rows every later plan reads (lanes, kernel names, launch links, the
/// stages and their waits: seven scans), and whose numbering sorts every GPU op: evaluate
/// `_pftrace_render_row` once, hold it in event_id order, and re-create the plans registered
/// after it over the held rows.
async fn hold_render_rows(ctx: &SessionContext) -> Result<()> {
    const ROWS: &str = "_pftrace_render_row";
    let df = ctx
        .sql(&format!("SELECT * FROM {ROWS} ORDER BY event_id"))
        .await?;
    let schema = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    let table = MemTable::try_new(schema, vec![batches])?
        .with_sort_order(vec![vec![col("event_id").sort(true, false)]]);
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
