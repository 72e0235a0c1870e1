//! Stage `export`, split, Perfetto flavour: a `.pftrace` cut into numbered parts that each
//! fit a viewer's memory (`--max-size`, in uncompressed `.pftrace` bytes). Each part is a
//! complete trace: every packet that is not an event (clock snapshot, track descriptors,
//! interned data with its `INCREMENTAL_STATE_CLEARED` flag: each part reads its sequences
//! from the start) in its place, then the events that start in its range: a slice's END goes
//! with its BEGIN (matched per track as trace_processor nests them: by time, ends first on a
//! tie), render stages and counters by their start. A link between an API slice and the
//! render stage it launched (`gpu_correlation`), or between two render stages
//! (`event_wait_ids`), whose ends fall in different parts is dropped from the packet that
//! holds it, and counted.
//!
//! In: the trace as an indexed writer wrote it ([`Indexed`]): compressed in blocks that each
//! inflate alone, with each packet's mark (start, size, kind, slice track, links) noted as
//! it was written. Nothing is read twice: each part is made of the blocks that fall whole
//! into it, copied compressed, and of the packets of the blocks a cut falls in, compressed
//! again (the Chrome split's copy pass, [`super::split`]); only a packet that loses a link
//! is decoded and encoded again. Out: `NAME.part001.pftrace`, ... (one gzip member each)
//! and `NAME.pftrace.parts.json`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use flate2::Compression;
use prost::Message;

use super::merge::{MergeConfig, MergeSummary};
use super::merge_pftrace::write_merged;
use super::pftrace::write_window;
use super::split::{
    cut_points, part_path, write_listing, write_runs, Part, PartRuns, Source, SplitSummary,
};
use super::{ExportSummary, PftraceConfig};
use crate::error::Error;
use crate::file::{folder_of, gzip, AtomicFile};
use crate::sink::perfetto::index::record_body;
use crate::sink::perfetto::proto::TracePacket;
use crate::sink::perfetto::{Indexed, PacketKind, PacketMark, PacketRemap, PftraceWriter};
use crate::Result;

/// Export the window at `config.window` as a `.pftrace` split into parts of at most
/// `max_bytes` each, named after `config.output`.
pub async fn export_pftrace_split(
    config: &PftraceConfig,
    max_bytes: u64,
) -> Result<(ExportSummary, SplitSummary)> {
    if config.compression_level > 9 {
        return Err(Error::Usage(format!(
            "--compression-level {} is out of range (0-9)",
            config.compression_level
        )));
    }
    super::refuse_writing_into_inputs(&config.window, &config.output, &config.filter)?;
    let written = async {
        let mut w = indexed_writer(&config.output, config.compression_level)?;
        write_window(config, &mut w, &PacketRemap::NONE).await?;
        let summary = ExportSummary {
            events: w.packets(),
            bytes: Some(w.uncompressed_bytes()),
        };
        let started = crate::profile::Clock::start();
        let trace = w.finish_indexed().map_err(Error::Write)?;
        let parts = split_pftrace(trace, &config.output, max_bytes, config.compression_level)?;
        started.report("split");
        Ok((summary, parts))
    };
    written
        .await
        .map_err(|e: Error| e.at_output(&config.output))
}

/// [`super::export_merged_pftrace`], split into parts of at most `max_bytes` each.
pub async fn export_merged_pftrace_split(
    config: &MergeConfig,
    single: &PftraceConfig,
    max_bytes: u64,
) -> Result<(MergeSummary, SplitSummary)> {
    super::refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    let written = async {
        let mut w = indexed_writer(&config.output, single.compression_level)?;
        let summary = write_merged(config, single, &mut w).await?;
        let trace = w.finish_indexed().map_err(Error::Write)?;
        let parts = split_pftrace(trace, &config.output, max_bytes, single.compression_level)?;
        Ok((summary, parts))
    };
    written
        .await
        .map_err(|e: Error| e.at_output(&config.output))
}

/// An indexed writer into an unnamed temporary file beside `output` (gone when dropped).
fn indexed_writer(output: &Path, level: u32) -> Result<PftraceWriter> {
    let dir = folder_of(output);
    let file = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    PftraceWriter::indexed(file, level)
}

/// Split the indexed trace `trace` into parts named after `output`, each at most
/// `max_bytes` of uncompressed packets, gzipped at `level`.
pub(crate) fn split_pftrace(
    trace: Indexed,
    output: &Path,
    max_bytes: u64,
    level: u32,
) -> Result<SplitSummary> {
    let mut profile = crate::profile::Clock::start();
    let Indexed {
        file,
        bytes,
        blocks,
        index,
    } = trace;
    let marks = &index.marks;
    // The slices' ENDs matched to their BEGINs, and the render stages by event id, side by side.
    let (owner, stages) = std::thread::scope(|scope| {
        let stages = scope.spawn(|| stages_by_id(marks));
        (match_slices(marks), stages.join())
    });
    let stages = stages.map_err(|_| Error::Internal("splitting: a thread panicked".into()))?;
    // What each placed packet brings along (its slice's END).
    let mut carried = vec![0u64; marks.len()];
    for (i, o) in owner.iter().enumerate() {
        if *o as usize != i {
            carried[*o as usize] += u64::from(marks[i].len);
        }
    }
    let header: u64 = (marks.iter())
        .filter(|m| m.kind == PacketKind::Header)
        .map(|m| u64::from(m.len))
        .sum();
    if header >= max_bytes {
        return Err(Error::Usage(format!(
            "--max-size {max_bytes} bytes: the packets every part repeats take {header} bytes already"
        )));
    }
    let mut timed: Vec<(u64, u32)> = Vec::new();
    for (i, mark) in marks.iter().enumerate() {
        if mark.kind != PacketKind::Header && owner[i] as usize == i {
            let bytes = u64::from(mark.len) + carried[i];
            let bytes = u32::try_from(bytes)
                .map_err(|_| Error::Internal(format!("splitting: a slice of {bytes} bytes")))?;
            timed.push((mark.ts, bytes));
        }
    }
    drop(carried);
    let cuts = cut_points(&[&timed], max_bytes - header)?;
    drop(timed);
    let parts = cuts.len() + 1;
    // Each event's part (None: a header, in every part).
    let part_of = |i: usize| -> Option<usize> {
        let mark = marks[owner[i] as usize];
        (mark.kind != PacketKind::Header).then(|| cuts.partition_point(|c| *c <= mark.ts))
    };

    // The links whose ends fall in different parts, by the packet that holds them.
    let mut dropped: FastMap<u32, Vec<u64>> = FastMap::default();
    for &(i, id) in &index.links {
        if let Some(j) = stages.get(&id) {
            if part_of(i as usize) != part_of(*j as usize) {
                dropped.entry(i).or_default().push(id);
            }
        }
    }
    drop(stages);
    let cut_flows = dropped.values().map(|ids| ids.len() as u64).sum();
    let cut_flow_events = dropped.len() as u64;
    profile.mark("split: cut points");

    // Each part's packets in their order, as byte ranges of the trace; a packet that loses
    // a link is encoded again.
    let source = Source {
        file: &file,
        bytes,
        blocks: &blocks,
    };
    let mut plans: Vec<PartRuns> = (0..parts).map(|_| PartRuns::default()).collect();
    let mut tallies: Vec<Tally> = (0..parts).map(|_| Tally::default()).collect();
    let mut reader = BlockReader::default();
    let mut at = 0u64;
    for (i, mark) in marks.iter().enumerate() {
        let (start, end) = (at, at + u64::from(mark.len));
        at = end;
        let rewritten = match dropped.get(&(i as u32)) {
            Some(ids) => Some(drop_links(reader.bytes(&source, start, end)?, ids)?),
            None => None,
        };
        // a slice's END is in the part of its BEGIN, and starts nothing there
        let starts = owner[i] as usize == i;
        let mut put = |k: usize| {
            if mark.kind != PacketKind::Header {
                tallies[k].add(starts.then_some(mark.ts));
            }
            match &rewritten {
                Some(record) => plans[k].put(record.clone()),
                None => plans[k].copy(0, start, end, 0),
            }
        };
        match part_of(i) {
            Some(k) => put(k),
            None => (0..parts).for_each(put),
        }
    }
    drop(reader);
    profile.mark("split: byte ranges");

    let paths: Vec<PathBuf> = (0..parts).map(|k| part_path(output, k)).collect();
    let mut files: Vec<AtomicFile> = (paths.iter())
        .map(|p| AtomicFile::create(p))
        .collect::<Result<_>>()?;
    let targets: Vec<&std::fs::File> = files.iter_mut().map(|f| &*f.file()).collect();
    write_runs(&plans, &[source], &targets, Some(Compression::new(level)))?;
    profile.mark("split: copy");
    let mut listed = Vec::with_capacity(parts);
    for (k, (file, path)) in files.into_iter().zip(paths).enumerate() {
        file.commit()?;
        let tally = &tallies[k];
        let (lo, hi) = tally.range.unwrap_or((0, 0));
        listed.push(Part {
            file: path,
            start_us: lo as f64 / 1e3,
            last_us: hi as f64 / 1e3,
            events: tally.events,
            bytes: plans[k].bytes(),
        });
    }
    write_listing(output, max_bytes, listed, cut_flows, cut_flow_events)
}

/// The uncompressed bytes of a trace's packets, inflated from its blocks, the last block
/// kept (the packets that lose links lie close together, near the cuts).
#[derive(Default)]
struct BlockReader {
    /// the block held, and its bytes
    held: Option<(usize, Vec<u8>)>,
    out: Vec<u8>,
}

impl BlockReader {
    /// The bytes `start..end` of `source`.
    fn bytes(&mut self, source: &Source, start: u64, end: u64) -> Result<&[u8]> {
        use std::os::unix::fs::FileExt;
        self.out.clear();
        let mut b = source
            .blocks
            .partition_point(|block| block.raw.end <= start);
        let mut at = start;
        while at < end {
            let block = source.blocks.get(b).ok_or_else(|| {
                Error::Internal(format!("splitting: no block holds byte {at} of the trace"))
            })?;
            if self.held.as_ref().is_none_or(|(k, _)| *k != b) {
                let mut z = vec![0; (block.z.end - block.z.start) as usize];
                source
                    .file
                    .read_exact_at(&mut z, block.z.start)
                    .map_err(Error::Write)?;
                let len = (block.raw.end - block.raw.start) as usize;
                let raw = gzip::inflate_block(&z, len).map_err(Error::Write)?;
                self.held = Some((b, raw));
            }
            let raw = &self.held.as_ref().expect("inflated above").1;
            let to = end.min(block.raw.end);
            let range = (at - block.raw.start) as usize..(to - block.raw.start) as usize;
            self.out.extend_from_slice(&raw[range]);
            at = to;
            b += 1;
        }
        Ok(&self.out)
    }
}

/// What one part holds.
#[derive(Default)]
struct Tally {
    /// its event packets
    events: u64,
    /// the least and greatest start of its events (a slice's: its BEGIN's)
    range: Option<(u64, u64)>,
}

impl Tally {
    fn add(&mut self, start: Option<u64>) {
        self.events += 1;
        let Some(ts) = start else {
            return;
        };
        let (lo, hi) = self.range.get_or_insert((ts, ts));
        *lo = (*lo).min(ts);
        *hi = (*hi).max(ts);
    }
}

/// A map with a fast hash for the split's integer keys (millions of lookups).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// For each packet, the packet it goes with: a slice's END goes with its BEGIN (matched per
/// track in the order trace_processor reads them: by time, an END before a BEGIN at the same
/// time, then in file order), every other packet with itself.
fn match_slices(marks: &[PacketMark]) -> Vec<u32> {
    let mut owner: Vec<u32> = (0..marks.len() as u32).collect();
    // Each track's BEGINs (1) and ENDs (-1); tracks are few, slices millions.
    let mut track_number: FastMap<u64, usize> = FastMap::default();
    let mut edges: Vec<Vec<(u64, i8, u32)>> = Vec::new();
    for (i, mark) in marks.iter().enumerate() {
        let (track, d) = match mark.kind {
            PacketKind::Begin(track) => (track, 1),
            PacketKind::End(track) => (track, -1),
            _ => continue,
        };
        let k = *track_number.entry(track).or_insert_with(|| {
            edges.push(Vec::new());
            edges.len() - 1
        });
        edges[k].push((mark.ts, d, i as u32));
    }
    let mut open = Vec::new();
    for mut e in edges {
        // Stable, so ties stay in file order: a track's edges come in runs mostly in time
        // order (its group's BEGINs, then its ENDs), which a stable sort merges.
        e.sort_by_key(|&(ts, d, _)| (ts, d));
        open.clear();
        for (_, d, i) in e {
            match d {
                1 => open.push(i),
                _ => {
                    if let Some(begin) = open.pop() {
                        owner[i as usize] = begin;
                    }
                }
            }
        }
    }
    owner
}

/// The render stages' packets by event id.
fn stages_by_id(marks: &[PacketMark]) -> FastMap<u64, u32> {
    (marks.iter().enumerate())
        .filter_map(|(i, mark)| match mark.kind {
            PacketKind::Stage(id) => Some((id, i as u32)),
            _ => None,
        })
        .collect()
}

/// The `Trace.packet` record `record` with its links to `ids` dropped.
fn drop_links(record: &[u8], ids: &[u64]) -> Result<Vec<u8>> {
    let bad = |e: String| Error::Internal(format!("splitting: a packet does not decode: {e}"));
    let body = record_body(record).ok_or_else(|| bad("not one record".into()))?;
    let mut packet = TracePacket::decode(body).map_err(|e| bad(e.to_string()))?;
    if let Some(c) = packet
        .track_event
        .as_mut()
        .and_then(|e| e.gpu_correlation.as_mut())
    {
        c.render_stage_submission_event_ids
            .retain(|id| !ids.contains(id));
    }
    if let Some(s) = &mut packet.gpu_render_stage_event {
        s.event_wait_ids.retain(|id| !ids.contains(id));
    }
    let body = packet.encode_to_vec();
    let mut out = vec![0x0a];
    prost::encoding::encode_varint(body.len() as u64, &mut out);
    out.extend_from_slice(&body);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(ts: u64, kind: PacketKind) -> PacketMark {
        PacketMark { ts, len: 10, kind }
    }

    #[test]
    fn an_end_goes_with_the_begin_it_closes_ends_first_on_a_tie() {
        use PacketKind::{Begin, End, Header};
        // track 1: [0, 5] holding [1, 2], then [5, 9]; track 2: an END without a BEGIN
        let marks = [
            mark(0, Begin(1)),
            mark(1, Begin(1)),
            mark(5, Begin(1)),
            mark(2, End(1)),
            mark(5, End(1)),
            mark(9, End(1)),
            mark(3, End(2)),
            mark(4, Header),
        ];
        assert_eq!(match_slices(&marks), vec![0, 1, 2, 1, 0, 2, 6, 7]);
    }

    #[test]
    fn a_packet_loses_only_the_links_it_is_told() {
        let stage = crate::sink::perfetto::index::tests::stage_waiting();
        let body = stage.encode_to_vec();
        let mut record = vec![0x0a, body.len() as u8];
        record.extend_from_slice(&body);
        let dropped = drop_links(&record, &[2]).unwrap();
        let packet = TracePacket::decode(record_body(&dropped).unwrap()).unwrap();
        assert_eq!(
            packet.gpu_render_stage_event.unwrap().event_wait_ids,
            vec![1]
        );
        assert!(drop_links(&record[..5], &[2]).is_err());
    }
}
