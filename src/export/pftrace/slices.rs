//! The track-event slices of a .pftrace, group by group: runtime and driver calls, overhead,
//! syncs (the CPU trace's are `cpu.rs`'s), and the GPU-track nesting repair.
//!
//! In: the `pftrace_api`, `pftrace_overhead` and `pftrace_sync` plans. Out: [`SliceRow`]s,
//! names and categories interned as they are made (a 10 M-event window has millions of
//! slices: each holds numbers, never its own strings).

use std::collections::{HashMap, HashSet};

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::collect;
use super::columns::{self, id_lists, int, ints, text, texts};
use super::tracks::{Id, Tracks};
use crate::sink::perfetto::{Interned, Slice};
use crate::Result;

/// One track-event slice.
pub(super) struct SliceRow<'a> {
    pub ts: i64,
    pub end: i64,
    pub uuid: u64,
    pub name_iid: u64,
    /// 0: no category
    pub category_iid: u64,
    pub annotations: Annotations,
    /// a CPU event's args object, JSON text borrowed from the CPU trace
    pub json: Option<&'a str>,
    /// render-stage event ids a call launched
    pub gpu_correlation: Vec<u64>,
}

/// A slice's debug annotations, by kind of slice.
pub(super) enum Annotations {
    None,
    Api {
        cbid: i64,
        correlation: i64,
    },
    /// a sync; `wait`: the awaited event's id and its record call's correlation id
    Sync {
        stream: i64,
        correlation: i64,
        device: i64,
        context: i64,
        wait: Option<(i64, i64)>,
    },
}

impl Annotations {
    /// The named integers, in the reference's order, into `out`.
    fn ints(&self, out: &mut Vec<(&'static str, i64)>) {
        out.clear();
        match *self {
            Annotations::None => {}
            Annotations::Api { cbid, correlation } => {
                out.extend([("cbid", cbid), ("correlation", correlation)]);
            }
            Annotations::Sync {
                stream,
                correlation,
                device,
                context,
                wait,
            } => {
                out.extend([
                    ("stream", stream),
                    ("correlation", correlation),
                    ("device", device),
                    ("context", context),
                ]);
                if let Some((event, record)) = wait {
                    out.extend([
                        ("wait_on_stream", -1),
                        ("wait_on_cuda_event_id", event),
                        ("wait_on_cuda_event_record_corr_id", record),
                    ]);
                }
            }
        }
    }
}

/// Interning of event names and categories (iids from 1, in first-use order).
#[derive(Default)]
pub(super) struct Names {
    events: HashMap<String, u64>,
    categories: HashMap<String, u64>,
}

impl Names {
    pub fn event(&mut self, name: &str, table: &mut Vec<String>) -> u64 {
        intern(&mut self.events, name, table)
    }

    pub fn category(&mut self, category: &str, table: &mut Vec<String>) -> u64 {
        intern(&mut self.categories, category, table)
    }
}

fn intern(iids: &mut HashMap<String, u64>, text: &str, table: &mut Vec<String>) -> u64 {
    if let Some(iid) = iids.get(text) {
        return *iid;
    }
    table.push(text.to_string());
    let iid = table.len() as u64;
    iids.insert(text.to_string(), iid);
    iid
}

/// The runtime calls' slices, then the driver calls', each group in `pos` order (empty
/// groups left out), and the process of the first call. The plan's batches are read as
/// they come; the driver group's names are interned after the runtime group's, as the
/// reference registers them.
pub(super) async fn api_slices<'a>(
    ctx: &SessionContext,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Result<(Vec<Vec<SliceRow<'a>>>, Option<i64>)> {
    const QUERY: &str = "SELECT * FROM pftrace_api ORDER BY pos";
    crate::profile::explain("pftrace_api", async || Ok(ctx.sql(QUERY).await?)).await?;
    let mut stream = ctx.sql(QUERY).await?.execute_stream().await?;
    // runtime, driver: rows, (pid, tid) pairs, driver names not interned yet
    let mut rows: [Vec<SliceRow>; 2] = [Vec::new(), Vec::new()];
    let mut pairs: [Vec<(i64, i64)>; 2] = [Vec::new(), Vec::new()];
    let mut first_pid: [Option<i64>; 2] = [None, None];
    let mut driver_names: Vec<String> = Vec::new();
    let mut driver_name_of_row: Vec<usize> = Vec::new();
    let mut driver_name_index: HashMap<String, usize> = HashMap::new();
    let mut runtime_category = None;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let (cats, call_names) = (texts(&batch, "cat")?, texts(&batch, "name")?);
        let (pid, tid) = (ints(&batch, "process_id")?, ints(&batch, "tid")?);
        let (start, end) = (ints(&batch, "start_ns")?, ints(&batch, "end_ns")?);
        let (cbid, corr) = (ints(&batch, "cbid")?, ints(&batch, "correlation_id")?);
        let links = id_lists(&batch, "gpu_correlation")?;
        for (i, mut link) in links.into_iter().enumerate() {
            let group = match text(&cats, i) {
                Some("cuda_runtime") => 0,
                Some("cuda_driver") => 1,
                _ => continue,
            };
            link.sort_unstable();
            first_pid[group].get_or_insert(int(&pid, i));
            pairs[group].push((int(&pid, i), int(&tid, i)));
            let name = text(&call_names, i).unwrap_or_default();
            let (name_iid, category_iid) = match group {
                0 => {
                    let category = *runtime_category.get_or_insert_with(|| {
                        names.category("cuda_runtime", &mut interned.categories)
                    });
                    (names.event(name, &mut interned.event_names), category)
                }
                _ => {
                    let next = driver_names.len();
                    let index = *driver_name_index.entry(name.to_string()).or_insert(next);
                    if index == next {
                        driver_names.push(name.to_string());
                    }
                    driver_name_of_row.push(index);
                    (0, 0)
                }
            };
            rows[group].push(SliceRow {
                ts: int(&start, i),
                end: int(&end, i),
                uuid: 0,
                name_iid,
                category_iid,
                annotations: Annotations::Api {
                    cbid: int(&cbid, i),
                    correlation: int(&corr, i),
                },
                json: None,
                gpu_correlation: link,
            });
        }
    }
    let [runtime, mut driver] = rows;
    if !driver.is_empty() {
        let category = names.category("cuda_driver", &mut interned.categories);
        for (row, index) in driver.iter_mut().zip(driver_name_of_row) {
            row.name_iid = names.event(&driver_names[index], &mut interned.event_names);
            row.category_iid = category;
        }
    }
    let mut groups = Vec::new();
    for (mut rows, pairs) in [runtime, driver].into_iter().zip(pairs) {
        if rows.is_empty() {
            continue;
        }
        let uuids = tracks.threads_packed(&pairs, "process {}", "thread {}");
        for (row, uuid) in rows.iter_mut().zip(uuids) {
            row.uuid = uuid;
        }
        groups.push(rows);
    }
    Ok((groups, first_pid[0].or(first_pid[1])))
}

/// The overhead slices, on the Overhead track, in file order; None when there are none.
pub(super) async fn overhead_slices<'a>(
    ctx: &SessionContext,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Result<Option<Vec<SliceRow<'a>>>> {
    let overhead = collect(ctx, "SELECT * FROM pftrace_overhead ORDER BY ord").await?;
    if !overhead.iter().any(|b| b.num_rows() > 0) {
        return Ok(None);
    }
    let uuid = tracks.thread(&Id::Int(-1), &Id::Int(0), "Overhead", "Overhead");
    let mut rows = Vec::new();
    for batch in &overhead {
        let kinds = texts(batch, "name")?;
        let (start, end) = (ints(batch, "start_ns")?, ints(batch, "end_ns")?);
        for i in 0..batch.num_rows() {
            let name = text(&kinds, i).unwrap_or_default();
            rows.push(SliceRow {
                ts: int(&start, i),
                end: int(&end, i),
                uuid,
                name_iid: names.event(name, &mut interned.event_names),
                category_iid: 0,
                annotations: Annotations::None,
                json: None,
                gpu_correlation: Vec::new(),
            });
        }
    }
    Ok(Some(rows))
}

/// The sync rows (`pftrace_sync`), read before the other groups are made (they are few,
/// and reading them early lets the rows they are computed from go).
pub(super) async fn sync_rows(ctx: &SessionContext) -> Result<Vec<RecordBatch>> {
    collect(ctx, "SELECT * FROM pftrace_sync ORDER BY ord").await
}

/// The sync slices, the non-waits' group then the waits', on their GPU stream tracks (also
/// returned, for [`nest_track_slices`]).
pub(super) fn sync_slices<'a>(
    sync: &[RecordBatch],
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Result<(Vec<Vec<SliceRow<'a>>>, HashSet<u64>)> {
    let mut groups = Vec::new();
    let mut stream_tracks = HashSet::new();
    for wait in [false, true] {
        let mut rows = Vec::new();
        let mut pairs = Vec::new();
        for batch in sync {
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
                let name = text(&kind, i).unwrap_or_default();
                rows.push(SliceRow {
                    ts: int(&start, i),
                    end: int(&end, i),
                    uuid: 0,
                    name_iid: names.event(name, &mut interned.event_names),
                    category_iid: 0,
                    annotations: Annotations::Sync {
                        stream: int(&stream, i),
                        correlation: int(&corr, i),
                        device: int(&device, i),
                        context: int(&context, i),
                        wait: wait.then(|| (int(&event, i), int(&record, i))),
                    },
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
    Ok((groups, stream_tracks))
}

/// The packets of `group`: every slice's BEGIN, then every END. A sync slice carries its
/// kind (its name) as `cuda_sync_kind`.
pub(super) fn write_group(
    w: &mut crate::sink::perfetto::PftraceWriter,
    group: &[SliceRow],
    interned: &Interned,
) -> std::io::Result<()> {
    let mut ints = Vec::with_capacity(7);
    for row in group {
        row.annotations.ints(&mut ints);
        let sync_kind;
        let strs: &[(&str, &str)] = match row.annotations {
            Annotations::Sync { .. } => {
                let name = &interned.event_names[(row.name_iid - 1) as usize];
                sync_kind = [("cuda_sync_kind", name.as_str())];
                &sync_kind
            }
            _ => &[],
        };
        let slice = Slice {
            ts: row.ts,
            track_uuid: row.uuid,
            name_iid: row.name_iid,
            category_iid: row.category_iid,
            gpu_correlation: &row.gpu_correlation,
            ints: &ints,
            strs,
            json: row.json,
        };
        w.packet(|p| crate::sink::perfetto::slice_begin(p, &slice))?;
    }
    for row in group {
        w.packet(|p| crate::sink::perfetto::slice_end(p, row.end, row.uuid))?;
    }
    Ok(())
}

/// Make each GPU-stream track's slices nest (Perfetto pairs BEGIN/END per track with a
/// stack): per track, in (start, end descending) order, an open slice that a later slice
/// outlasts is cut at that slice's start. Only ends change.
pub(super) fn nest_track_slices(groups: &mut [Vec<SliceRow>], stream_tracks: &HashSet<u64>) {
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
