//! The track-event slices of a .pftrace, group by group: runtime and driver calls, overhead,
//! syncs (the CPU trace's are `cpu.rs`'s; the critical path's, `critical.rs`'s), and the
//! GPU-track nesting repair.
//!
//! In: the `pftrace_api`, `pftrace_overhead` and `pftrace_sync` plans. Out: [`SliceRow`]s, names and categories interned as they
//! are made (a 10 M-event window has millions of slices: each holds numbers, never its own
//! strings).

use std::collections::HashSet;

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::collect;
use super::columns::{self, int, ints, text, texts};
use super::tracks::{Id, Tracks};
use crate::sink::perfetto::{Interned, Names, PacketBuffer, PacketRemap, Packets, Slice};
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
    /// a sync (boxed: syncs are few, and every slice is as large as the largest variant)
    Sync(Box<SyncNotes>),
    /// a segment of a critical path (`export --critical-path`)
    Critical(Box<CriticalNotes>),
}

/// A critical-path segment's annotations: its step, its place on the path, the time it
/// adds to the path (ns), what it is and its cause.
pub(super) struct CriticalNotes {
    pub step: i64,
    pub position: i64,
    pub dur_ns: i64,
    pub kind: String,
    pub bound_by: Option<String>,
}

/// A sync's annotations; `wait`: the awaited event's id and its record call's correlation id.
pub(super) struct SyncNotes {
    stream: i64,
    correlation: i64,
    device: i64,
    context: i64,
    wait: Option<(i64, i64)>,
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
            Annotations::Sync(ref notes) => {
                let SyncNotes {
                    stream,
                    correlation,
                    device,
                    context,
                    wait,
                } = **notes;
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
            Annotations::Critical(ref notes) => {
                out.extend([
                    ("critical", 1),
                    ("step", notes.step),
                    ("position", notes.position),
                    ("dur_ns", notes.dur_ns),
                ]);
            }
        }
    }
}

/// The runtime calls' slices, then the driver calls', each group in `pos` order (empty
/// groups left out), and the process of the first call. The plan's rows are read as they
/// come, unsorted (a sort would hold every call's row at once), and put in `pos` order
/// here; names are then interned in that order, the runtime group's before the driver
/// group's, as the reference registers them.
pub(super) async fn api_slices<'a>(
    ctx: &SessionContext,
    tracks: &mut Tracks,
    names: &mut Names,
    interned: &mut Interned,
) -> Result<(Vec<Vec<SliceRow<'a>>>, Option<i64>)> {
    const QUERY: &str = "SELECT * FROM pftrace_api";
    crate::profile::explain("pftrace_api", async || Ok(ctx.sql(QUERY).await?)).await?;
    let mut stream = ctx.sql(QUERY).await?.execute_stream().await?;
    // runtime, driver: rows (name_iid: the name's number in `call_names`, from 1, until
    // interned), their positions, (pid, tid) pairs
    let mut rows: [Vec<SliceRow>; 2] = [Vec::new(), Vec::new()];
    let mut positions: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
    let mut pairs: [Vec<(i64, i64)>; 2] = [Vec::new(), Vec::new()];
    let mut call_names: Vec<String> = Vec::new();
    let mut call_name_index = Names::default();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let (cats, names_in) = (texts(&batch, "cat")?, texts(&batch, "name")?);
        let (pos, pid, tid) = (
            ints(&batch, "pos")?,
            ints(&batch, "process_id")?,
            ints(&batch, "tid")?,
        );
        let (start, end) = (ints(&batch, "start_ns")?, ints(&batch, "end_ns")?);
        let (cbid, corr) = (ints(&batch, "cbid")?, ints(&batch, "correlation_id")?);
        let links = ints(&batch, "gpu_correlation")?;
        for i in 0..batch.num_rows() {
            let group = match text(&cats, i) {
                Some("cuda_runtime") => 0,
                Some("cuda_driver") => 1,
                _ => continue,
            };
            // Event ids start at 1: 0 is a NULL, no render stage.
            let link = match int(&links, i) {
                0 => Vec::new(),
                id => vec![id as u64],
            };
            positions[group].push(int(&pos, i));
            pairs[group].push((int(&pid, i), int(&tid, i)));
            let name = text(&names_in, i).unwrap_or_default();
            let name_number = call_name_index.event(name, &mut call_names);
            rows[group].push(SliceRow {
                ts: int(&start, i),
                end: int(&end, i),
                uuid: 0,
                name_iid: name_number,
                category_iid: 0,
                annotations: Annotations::Api {
                    cbid: int(&cbid, i),
                    correlation: int(&corr, i),
                },
                json: None,
                gpu_correlation: link,
            });
        }
    }
    let mut groups = Vec::new();
    let mut first_pid = None;
    let mut iid_of_name: Vec<Option<u64>> = vec![None; call_names.len()];
    for ((mut rows, mut positions), (mut pairs, category)) in rows
        .into_iter()
        .zip(positions)
        .zip(pairs.into_iter().zip(["cuda_runtime", "cuda_driver"]))
    {
        if rows.is_empty() {
            continue;
        }
        let order = order_of(&positions);
        permute(&mut rows, order.clone());
        permute(&mut pairs, order);
        positions.sort_unstable();
        merge_calls(&mut rows, &mut pairs, &positions);
        first_pid = first_pid.or(Some(pairs[0].0));
        let category = names.category(category, &mut interned.categories);
        for row in &mut rows {
            let index = row.name_iid as usize - 1;
            row.name_iid = *iid_of_name[index]
                .get_or_insert_with(|| names.event(&call_names[index], &mut interned.event_names));
            row.category_iid = category;
        }
        let uuids = tracks.threads_packed(&pairs, "process {}", "thread {}");
        for (row, uuid) in rows.iter_mut().zip(uuids) {
            row.uuid = uuid;
        }
        groups.push(rows);
    }
    Ok((groups, first_pid))
}

/// Merge each call's rows (adjacent, with equal `positions`: one per render stage its
/// correlation launched) into its first, which takes every row's links, in ascending order.
fn merge_calls(rows: &mut Vec<SliceRow>, pairs: &mut Vec<(i64, i64)>, positions: &[i64]) {
    let mut kept = 0;
    for i in 0..rows.len() {
        if i > 0 && positions[i] == positions[i - 1] {
            let links = std::mem::take(&mut rows[i].gpu_correlation);
            rows[kept - 1].gpu_correlation.extend(links);
        } else {
            rows.swap(kept, i);
            pairs.swap(kept, i);
            kept += 1;
        }
    }
    rows.truncate(kept);
    pairs.truncate(kept);
    for row in rows {
        row.gpu_correlation.sort_unstable();
    }
}

/// The indices of `keys` in ascending key order.
fn order_of(keys: &[i64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by_key(|i| keys[*i]);
    order
}

/// Reorder `items` in place so that item k becomes the old item `order[k]` (a permutation).
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..items.len() {
        // Walk the cycle through `start`, pulling each position's item into place.
        let mut at = start;
        while order[at] != DONE {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
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
                    annotations: Annotations::Sync(Box::new(SyncNotes {
                        stream: int(&stream, i),
                        correlation: int(&corr, i),
                        device: int(&device, i),
                        context: int(&context, i),
                        wait: wait.then(|| (int(&event, i), int(&record, i))),
                    })),
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

/// The packets of `group`: every slice's BEGIN, then every END, renamed by `remap`. A sync
/// slice carries its kind (its name) as `cuda_sync_kind`.
pub(super) fn write_group(
    w: &mut impl Packets,
    group: &[SliceRow],
    interned: &Interned,
    remap: &PacketRemap,
) -> std::io::Result<()> {
    write_begins(w, group, interned, remap)?;
    write_ends(w, group, remap)
}

/// [`write_group`] of a group given in stretches (the slices of all, in order), into
/// buffers that hold the group's packets in their order. The stretches' BEGIN packets are
/// encoded side by side: a CPU slice's args are JSON read again to be spread, millions of
/// them on a large trace.
pub(super) fn encode_group(
    stretches: &[Vec<SliceRow>],
    interned: &Interned,
    remap: &PacketRemap,
) -> std::io::Result<Vec<PacketBuffer>> {
    let parts: Vec<&[SliceRow]> = stretches.iter().map(Vec::as_slice).collect();
    let mut buffers = crate::threads::on_threads(parts, |rows| {
        let mut buffer = PacketBuffer::default();
        write_begins(&mut buffer, rows, interned, remap).map(|()| buffer)
    })
    .into_iter()
    .collect::<std::io::Result<Vec<_>>>()?;
    let mut ends = PacketBuffer::default();
    for rows in stretches {
        write_ends(&mut ends, rows, remap)?;
    }
    buffers.push(ends);
    Ok(buffers)
}

pub(super) fn write_begins(
    w: &mut impl Packets,
    group: &[SliceRow],
    interned: &Interned,
    remap: &PacketRemap,
) -> std::io::Result<()> {
    let mut ints = Vec::with_capacity(7);
    for row in group {
        row.annotations.ints(&mut ints);
        let sync_kind;
        let critical;
        let strs: &[(&str, &str)] = match row.annotations {
            Annotations::Sync(_) => {
                let name = &interned.event_names[(row.name_iid - 1) as usize];
                sync_kind = [("cuda_sync_kind", name.as_str())];
                &sync_kind
            }
            Annotations::Critical(ref notes) => {
                critical = [
                    ("type", notes.kind.as_str()),
                    ("bound_by", notes.bound_by.as_deref().unwrap_or("")),
                ];
                &critical[..1 + notes.bound_by.is_some() as usize]
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
        w.packet(|p| crate::sink::perfetto::slice_begin(p, &slice, remap))?;
    }
    Ok(())
}

pub(super) fn write_ends(
    w: &mut impl Packets,
    group: &[SliceRow],
    remap: &PacketRemap,
) -> std::io::Result<()> {
    for row in group {
        w.packet(|p| crate::sink::perfetto::slice_end(p, row.end, row.uuid, remap))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_put_in_key_order_in_place() {
        let keys = [40, 10, 30, 20, 50, 0];
        let mut items = vec!["d", "a", "c", "b", "e", "z"];
        permute(&mut items, order_of(&keys));
        assert_eq!(items, ["z", "a", "b", "c", "d", "e"]);
        let mut none: Vec<u8> = Vec::new();
        permute(&mut none, order_of(&[]));
        assert!(none.is_empty());
    }

    fn call(ts: i64, links: &[u64]) -> SliceRow<'static> {
        SliceRow {
            ts,
            end: ts + 1,
            uuid: 0,
            name_iid: 0,
            category_iid: 0,
            annotations: Annotations::None,
            json: None,
            gpu_correlation: links.to_vec(),
        }
    }

    #[test]
    fn a_calls_rows_merge_into_one_with_all_its_links_in_order() {
        let mut rows = vec![
            call(1, &[]),
            call(2, &[9]),
            call(2, &[4]),
            call(2, &[]),
            call(3, &[5]),
            call(4, &[8]),
            call(4, &[6]),
        ];
        let mut pairs: Vec<(i64, i64)> = (0..7).map(|i| (i, i)).collect();
        merge_calls(&mut rows, &mut pairs, &[10, 20, 20, 20, 30, 40, 40]);
        let merged: Vec<_> = rows
            .iter()
            .map(|r| (r.ts, r.gpu_correlation.clone()))
            .collect();
        assert_eq!(
            merged,
            [(1, vec![]), (2, vec![4, 9]), (3, vec![5]), (4, vec![6, 8])]
        );
        assert_eq!(pairs, [(0, 0), (1, 1), (4, 4), (5, 5)]);
    }
}
