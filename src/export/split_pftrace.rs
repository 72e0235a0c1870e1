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
//! In: the whole trace, as the export wrote it to a temporary file, read twice as a stream
//! of packets: once to note each packet's start, size, kind, slice track and links (a small
//! wire-format scan, no decoding), once to copy each packet into its parts (decoded and
//! encoded again only where a link is dropped). Out: `NAME.part001.pftrace`, ... (gzipped
//! at the export's level) and `NAME.parts.json`.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

use prost::Message;

use super::merge::{MergeConfig, MergeSummary};
use super::split::{cut_points, part_path, write_listing, Part, SplitSummary};
use super::{export_pftrace, ExportSummary, PftraceConfig};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::perfetto::proto::TracePacket;
use crate::sink::perfetto::{Packets, PftraceWriter};
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
    let whole = whole_beside(&config.output)?;
    let mut one = config.clone();
    one.output = whole.path().to_path_buf();
    one.compression_level = 0;
    let summary = export_pftrace(&one).await?;
    let started = crate::profile::Clock::start();
    let parts = split_pftrace(
        whole.path(),
        &config.output,
        max_bytes,
        config.compression_level,
    )
    .map_err(|e| e.at_output(&config.output))?;
    started.report("split");
    Ok((summary, parts))
}

/// [`super::export_merged_pftrace`], split into parts of at most `max_bytes` each.
pub async fn export_merged_pftrace_split(
    config: &MergeConfig,
    single: &PftraceConfig,
    max_bytes: u64,
) -> Result<(MergeSummary, SplitSummary)> {
    super::refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    let whole = whole_beside(&config.output)?;
    let mut merged = config.clone();
    merged.output = whole.path().to_path_buf();
    let mut one = single.clone();
    one.compression_level = 0;
    let summary = super::export_merged_pftrace(&merged, &one).await?;
    let parts = split_pftrace(
        whole.path(),
        &config.output,
        max_bytes,
        single.compression_level,
    )
    .map_err(|e| e.at_output(&config.output))?;
    Ok((summary, parts))
}

/// A temporary file beside `output` for the whole trace (gone when dropped).
fn whole_beside(output: &Path) -> Result<tempfile::NamedTempFile> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".tracesql-whole-")
        .suffix(".pftrace")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))
}

/// What the split notes of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Info {
    /// its timestamp (0 when it has none)
    ts: u64,
    /// its body's bytes with the record's key and length
    len: u32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// not an event: in every part
    Header,
    /// a SLICE_BEGIN on this track
    Begin(u64),
    /// a SLICE_END on this track
    End(u64),
    /// a render stage with this event id
    Stage(u64),
    /// any other event (a counter sample, an instant)
    Event,
}

/// Split the `.pftrace` at `whole` into parts named after `output`, each at most
/// `max_bytes` of uncompressed packets, gzipped at `level`.
pub(crate) fn split_pftrace(
    whole: &Path,
    output: &Path,
    max_bytes: u64,
    level: u32,
) -> Result<SplitSummary> {
    // Pass 1: each packet's start, size, kind, and links.
    // (packet, the render-stage event id it links to: submitted as, or waits for)
    let (mut infos, mut links) = (Vec::new(), Vec::<(u32, u64)>::new());
    read_packets(whole, |i, body| {
        let (info, to) = scan(body)?;
        infos.push(info);
        links.extend(to.into_iter().map(|id| (i, id)));
        Ok(())
    })?;
    let owner = match_slices(&infos);
    // What each placed packet brings along (its slice's END).
    let mut carried = vec![0u64; infos.len()];
    for (i, o) in owner.iter().enumerate() {
        if *o as usize != i {
            carried[*o as usize] += u64::from(infos[i].len);
        }
    }
    let header: u64 = (infos.iter())
        .filter(|i| i.kind == Kind::Header)
        .map(|i| u64::from(i.len))
        .sum();
    if header >= max_bytes {
        return Err(Error::Usage(format!(
            "--max-size {max_bytes} bytes: the packets every part repeats take {header} bytes already"
        )));
    }
    let mut timed: Vec<(u64, u32)> = Vec::new();
    for (i, info) in infos.iter().enumerate() {
        if info.kind != Kind::Header && owner[i] as usize == i {
            let bytes = u64::from(info.len) + carried[i];
            let bytes = u32::try_from(bytes)
                .map_err(|_| Error::Internal(format!("splitting: a slice of {bytes} bytes")))?;
            timed.push((info.ts, bytes));
        }
    }
    drop(carried);
    let cuts = cut_points(&mut timed, max_bytes - header)?;
    drop(timed);
    let parts = cuts.len() + 1;
    // Each event's part (None: a header, in every part).
    let part_of = |i: usize| -> Option<usize> {
        let info = infos[owner[i] as usize];
        (info.kind != Kind::Header).then(|| cuts.partition_point(|c| *c <= info.ts))
    };

    // The links whose ends fall in different parts, by the packet that holds them.
    let stages: HashMap<u64, u32> = (infos.iter().enumerate())
        .filter_map(|(i, info)| match info.kind {
            Kind::Stage(id) => Some((id, i as u32)),
            _ => None,
        })
        .collect();
    let mut dropped: HashMap<u32, Vec<u64>> = HashMap::new();
    for (i, id) in links {
        if let Some(j) = stages.get(&id) {
            if part_of(i as usize) != part_of(*j as usize) {
                dropped.entry(i).or_default().push(id);
            }
        }
    }
    drop(stages);
    let cut_flows = dropped.values().map(|ids| ids.len() as u64).sum();
    let cut_flow_events = dropped.len() as u64;

    // Pass 2: every part written at once, the packets in their order.
    let mut writers: Vec<(AtomicFile, PftraceWriter, Tally)> = (0..parts)
        .map(|k| {
            let path = part_path(output, k);
            let mut file = AtomicFile::create(&path)?;
            let out = file.file().try_clone().map_err(|e| Error::io(&path, e))?;
            let w = PftraceWriter::try_new(out, level)?;
            Ok((file, w, Tally::default()))
        })
        .collect::<Result<_>>()?;
    let mut rewritten = Vec::new();
    read_packets(whole, |i, body| {
        let body = match dropped.get(&i) {
            Some(ids) => {
                rewritten.clear();
                drop_links(body, ids)?.encode_raw(&mut rewritten);
                &rewritten[..]
            }
            None => body,
        };
        let info = infos[i as usize];
        // a slice's END is in the part of its BEGIN, and starts nothing there
        let starts = owner[i as usize] == i;
        let mut put = |k: usize| {
            let (_, w, tally) = &mut writers[k];
            if info.kind != Kind::Header {
                tally.add(starts.then_some(info.ts));
            }
            w.packet(|p| p.encoded(body))
                .map_err(|e| Error::io(part_path(output, k), e))
        };
        match part_of(i as usize) {
            Some(k) => put(k),
            None => (0..parts).try_for_each(put),
        }
    })?;
    let mut listed = Vec::with_capacity(parts);
    for (k, (file, w, tally)) in writers.into_iter().enumerate() {
        let path = part_path(output, k);
        let bytes = w.uncompressed_bytes();
        w.finish().map_err(|e| Error::io(&path, e))?;
        file.commit()?;
        let (lo, hi) = tally.range.unwrap_or((0, 0));
        listed.push(Part {
            file: path,
            start_us: lo as f64 / 1e3,
            last_us: hi as f64 / 1e3,
            events: tally.events,
            bytes,
        });
    }
    write_listing(output, max_bytes, listed, cut_flows, cut_flow_events)
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

/// For each packet, the packet it goes with: a slice's END goes with its BEGIN (matched per
/// track in the order trace_processor reads them: by time, an END before a BEGIN at the same
/// time, then in file order), every other packet with itself.
fn match_slices(infos: &[Info]) -> Vec<u32> {
    let mut owner: Vec<u32> = (0..infos.len() as u32).collect();
    let mut edges: HashMap<u64, Vec<(u64, i8, u32)>> = HashMap::new();
    for (i, info) in infos.iter().enumerate() {
        match info.kind {
            Kind::Begin(track) => edges.entry(track).or_default().push((info.ts, 1, i as u32)),
            Kind::End(track) => edges
                .entry(track)
                .or_default()
                .push((info.ts, -1, i as u32)),
            _ => {}
        }
    }
    let mut open = Vec::new();
    for (_, mut e) in edges {
        e.sort_unstable();
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

/// A packet body's [`Info`] (its `len` the record's) and the render-stage ids it links to.
fn scan(body: &[u8]) -> Result<(Info, Vec<u64>)> {
    let bad = || Error::Internal("splitting: a packet does not parse".into());
    let mut info = Info {
        ts: 0,
        len: record_len(body.len()),
        kind: Kind::Header,
    };
    let mut to = Vec::new();
    for field in Fields(body) {
        let (number, value) = field.ok_or_else(bad)?;
        match (number, value) {
            (8, Value::Int(ts)) => info.ts = ts,
            (11, Value::Bytes(event)) => {
                let (mut kind, mut track) = (0, 0);
                for f in Fields(event) {
                    match f.ok_or_else(bad)? {
                        (9, Value::Int(k)) => kind = k,
                        (11, Value::Int(t)) => track = t,
                        (3000, Value::Bytes(c)) => {
                            for f in Fields(c) {
                                if let (1, Value::Int(id)) = f.ok_or_else(bad)? {
                                    to.push(id);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                info.kind = match kind {
                    1 => Kind::Begin(track),
                    2 => Kind::End(track),
                    _ => Kind::Event,
                };
            }
            (53, Value::Bytes(stage)) => {
                let mut id = 0;
                for f in Fields(stage) {
                    match f.ok_or_else(bad)? {
                        (1, Value::Int(i)) => id = i,
                        (18, Value::Int(wait)) => to.push(wait),
                        _ => {}
                    }
                }
                info.kind = Kind::Stage(id);
            }
            (52, _) => info.kind = Kind::Event,
            _ => {}
        }
    }
    Ok((info, to))
}

/// The bytes of a `Trace.packet` record whose body has `len` bytes.
fn record_len(len: usize) -> u32 {
    let mut varint = 1;
    while len >> (7 * varint) != 0 {
        varint += 1;
    }
    (1 + varint + len) as u32
}

/// `body` decoded with the links to `ids` dropped.
fn drop_links(body: &[u8], ids: &[u64]) -> Result<TracePacket> {
    let mut packet = TracePacket::decode(body)
        .map_err(|e| Error::Internal(format!("splitting: a packet does not decode: {e}")))?;
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
    Ok(packet)
}

/// A field's value: a varint or fixed number, or a length-delimited payload.
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

/// The fields of a message, in order; None for a malformed one (then the scan stops).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Option<(u64, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_none() {
            self.0 = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        (n <= self.0.len()).then(|| {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        })
    }

    fn field(&mut self) -> Option<(u64, Value<'a>)> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Int(self.varint()?),
            1 => Value::Int(u64::from_le_bytes(self.take(8)?.try_into().ok()?)),
            2 => {
                let n = usize::try_from(self.varint()?).ok()?;
                Value::Bytes(self.take(n)?)
            }
            5 => Value::Int(u64::from(u32::from_le_bytes(
                self.take(4)?.try_into().ok()?,
            ))),
            _ => return None,
        };
        Some((key >> 3, value))
    }
}

/// Each packet body of the (gzipped) `.pftrace` at `path`, with its index, in order.
fn read_packets(path: &Path, mut each: impl FnMut(u32, &[u8]) -> Result<()>) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut input = BufReader::with_capacity(1 << 20, flate2::read::GzDecoder::new(file));
    let bad = |what: &str| Error::Internal(format!("{}: {what}", path.display()));
    let mut buf = Vec::new();
    for i in 0u32.. {
        let Some(key) = read_varint(&mut input).map_err(|e| Error::io(path, e))? else {
            return Ok(());
        };
        if key != (1 << 3 | 2) {
            return Err(bad("not a Trace of packets"));
        }
        let len = read_varint(&mut input)
            .map_err(|e| Error::io(path, e))?
            .ok_or_else(|| bad("truncated"))?;
        buf.resize(len as usize, 0);
        input.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
        each(i, &buf)?;
    }
    Err(bad("more than 2^32 packets"))
}

/// A varint; None at the end of the input (before its first byte).
fn read_varint(input: &mut impl Read) -> std::io::Result<Option<u64>> {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let mut byte = [0u8];
        if input.read(&mut byte)? == 0 {
            return match shift {
                0 => Ok(None),
                _ => Err(std::io::ErrorKind::UnexpectedEof.into()),
            };
        }
        value |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(Some(value));
        }
        shift += 7;
        if shift > 63 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(ts: u64, kind: Kind) -> Info {
        Info { ts, len: 10, kind }
    }

    #[test]
    fn an_end_goes_with_the_begin_it_closes_ends_first_on_a_tie() {
        // track 1: [0, 5] holding [1, 2], then [5, 9]; track 2: an END without a BEGIN
        let infos = [
            info(0, Kind::Begin(1)),
            info(1, Kind::Begin(1)),
            info(5, Kind::Begin(1)),
            info(2, Kind::End(1)),
            info(5, Kind::End(1)),
            info(9, Kind::End(1)),
            info(3, Kind::End(2)),
            info(4, Kind::Header),
        ];
        assert_eq!(match_slices(&infos), vec![0, 1, 2, 1, 0, 2, 6, 7]);
    }

    #[test]
    fn the_scan_reads_kind_track_time_and_links_of_a_packet() {
        use crate::sink::perfetto::proto::{GpuCorrelation, GpuRenderStageEvent, TrackEvent};
        let begin = TracePacket {
            timestamp: Some(1234),
            track_event: Some(TrackEvent {
                r#type: Some(1),
                track_uuid: Some(77),
                gpu_correlation: Some(GpuCorrelation {
                    render_stage_submission_event_ids: vec![5, 1 << 40],
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let body = begin.encode_to_vec();
        let (info, to) = scan(&body).unwrap();
        assert_eq!(info.ts, 1234);
        assert_eq!(info.kind, Kind::Begin(77));
        assert_eq!(info.len as usize, 2 + body.len());
        assert_eq!(to, vec![5, 1 << 40]);
        let stage = TracePacket {
            timestamp: Some(9),
            gpu_render_stage_event: Some(GpuRenderStageEvent {
                event_id: Some(3),
                event_wait_ids: vec![1, 2],
                ..Default::default()
            }),
            ..Default::default()
        };
        let (info, to) = scan(&stage.encode_to_vec()).unwrap();
        assert_eq!((info.kind, to), (Kind::Stage(3), vec![1, 2]));
        let dropped = drop_links(&stage.encode_to_vec(), &[2]).unwrap();
        assert_eq!(
            dropped.gpu_render_stage_event.unwrap().event_wait_ids,
            vec![1]
        );
        assert!(scan(&[0x42, 0x05, 1]).is_err(), "a truncated field");
        assert_eq!(record_len(127), 129);
        assert_eq!(record_len(128), 131);
    }
}
