//! Stage `export`, split: a Chrome trace cut into numbered parts that each fit a viewer's
//! memory (`--max-size`). Each part covers a time range and is a complete trace: the whole
//! document's top-level members and every metadata (`M`) event (process and thread names,
//! sort order), then the events that start in its range. A flow (`s`/`t`/`f` events sharing
//! category, name and id) whose events fall in different parts is left out of all of them,
//! and counted. Beside the parts, `NAME.parts.json` lists each part's file, time range,
//! events and bytes.
//!
//! In: a whole Chrome trace (uncompressed JSON, as the export wrote it to a temporary
//! file), read twice as a stream: once to size the events by time, once to write them.
//! Out: `NAME.part001.json[.gz]`, ... and `NAME.parts.json`, each written atomically.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::Frame;
use crate::Result;

/// What was written.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitSummary {
    pub parts: Vec<Part>,
    /// the listing, `NAME.parts.json`
    pub index: PathBuf,
    /// flows whose ends fell in different parts, left out
    pub cut_flows: u64,
    /// their events
    pub cut_flow_events: u64,
}

/// One part.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub file: PathBuf,
    /// the least start (µs) of its events that are not metadata
    pub start_us: f64,
    /// the greatest start (µs) of them
    pub last_us: f64,
    pub events: u64,
    /// its uncompressed JSON bytes
    pub bytes: u64,
}

/// `500MB`, `1.5GB`, `200k`, `1000000` (decimal units, B optional; KiB/MiB/GiB binary).
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let units: [(&str, f64); 10] = [
        ("kib", 1024.0),
        ("mib", 1024.0 * 1024.0),
        ("gib", 1024.0 * 1024.0 * 1024.0),
        ("kb", 1e3),
        ("mb", 1e6),
        ("gb", 1e9),
        ("k", 1e3),
        ("m", 1e6),
        ("g", 1e9),
        ("b", 1.0),
    ];
    let (number, scale) = (units.iter())
        .find_map(|(unit, scale)| lower.strip_suffix(unit).map(|n| (n.trim(), *scale)))
        .unwrap_or((lower.as_str(), 1.0));
    match number.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok((n * scale) as u64),
        _ => Err(Error::Usage(format!(
            "--max-size {text:?}: expected a size such as 500MB, 1.5GB or 200000"
        ))),
    }
}

/// The file names of `output`'s parts: `trace.json.gz` -> (`trace`, `.json.gz`).
fn stem_and_suffix(output: &Path) -> (PathBuf, String) {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for suffix in [".json.gz", ".json", ".pftrace.gz", ".pftrace", ".gz"] {
        if let Some(stem) = name.strip_suffix(suffix) {
            if !stem.is_empty() {
                return (output.with_file_name(stem), suffix.to_string());
            }
        }
    }
    (output.to_path_buf(), String::new())
}

/// The listing's path for `output`: `trace.parts.json`.
pub fn index_path(output: &Path) -> PathBuf {
    let (stem, _) = stem_and_suffix(output);
    let mut name = stem.into_os_string();
    name.push(".parts.json");
    PathBuf::from(name)
}

fn part_path(output: &Path, k: usize) -> PathBuf {
    let (stem, suffix) = stem_and_suffix(output);
    let mut name = stem.into_os_string();
    name.push(format!(".part{:03}{suffix}", k + 1));
    PathBuf::from(name)
}

/// What the split reads of each event.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    ph: Option<&'a str>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(borrow, default)]
    cat: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// How an event is placed.
enum Kind {
    /// metadata: in every part
    Header,
    /// a flow event of the flow with this key
    Flow(u64, f64),
    /// any other event, starting at this time
    Timed(f64),
}

fn kind(raw: &str) -> Result<Kind> {
    let probe: Probe = serde_json::from_str(raw)
        .map_err(|e| Error::Internal(format!("splitting: an event does not parse: {e}")))?;
    let ts = probe.ts.unwrap_or(0.0);
    Ok(match probe.ph {
        Some("M") => Kind::Header,
        Some("s" | "t" | "f") => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            probe.cat.hash(&mut h);
            probe.name.hash(&mut h);
            probe.id.map(RawValue::get).hash(&mut h);
            Kind::Flow(h.finish(), ts)
        }
        _ => Kind::Timed(ts),
    })
}

/// Read the trace at `path` as a stream: `members` gets every top-level member but
/// `traceEvents` (key, JSON text; None marks the events' place), `event` each event's text.
fn read_trace(
    path: &Path,
    members: &mut Vec<(String, Option<String>)>,
    event: &mut dyn FnMut(&str) -> Result<()>,
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let mut failure = None;
    let read = (&mut de).deserialize_map(TopVisitor {
        members,
        event,
        failure: &mut failure,
    });
    if let Some(e) = failure {
        return Err(e);
    }
    read.and_then(|()| de.end())
        .map_err(|e| Error::Internal(format!("{}: {e}", path.display())))
}

struct TopVisitor<'m, 'e> {
    members: &'m mut Vec<(String, Option<String>)>,
    event: &'e mut dyn FnMut(&str) -> Result<()>,
    failure: &'m mut Option<Error>,
}

impl<'de> Visitor<'de> for TopVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Chrome trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "traceEvents" {
                map.next_value_seed(EventsSeed {
                    event: &mut *self.event,
                    failure: &mut *self.failure,
                })?;
                self.members.push((key, None));
            } else {
                let value: Box<RawValue> = map.next_value()?;
                self.members.push((key, Some(value.get().to_string())));
            }
        }
        Ok(())
    }
}

struct EventsSeed<'e, 'f> {
    event: &'e mut dyn FnMut(&str) -> Result<()>,
    failure: &'f mut Option<Error>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<Box<RawValue>>()? {
            if let Err(e) = (self.event)(raw.get()) {
                *self.failure = Some(e);
                return Err(serde::de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

/// Split the Chrome trace at `whole` into parts named after `output`, each at most
/// `max_bytes` of uncompressed JSON (gzipped when `output` ends in `.gz`).
pub fn split_chrome(whole: &Path, output: &Path, max_bytes: u64) -> Result<SplitSummary> {
    // Pass 1: the header's bytes, each timed event's start and bytes, each flow's events.
    let mut members = Vec::new();
    let mut header_bytes = 0u64;
    let mut header_events = 0u64;
    let mut timed: Vec<(f64, u32)> = Vec::new();
    let mut flows: HashMap<u64, Vec<f64>> = HashMap::new();
    read_trace(whole, &mut members, &mut |raw| {
        let bytes = raw.len() as u64 + 1;
        match kind(raw)? {
            Kind::Header => {
                header_bytes += bytes;
                header_events += 1;
            }
            Kind::Flow(key, ts) => {
                timed.push((ts, bytes as u32));
                flows.entry(key).or_default().push(ts);
            }
            Kind::Timed(ts) => timed.push((ts, bytes as u32)),
        }
        Ok(())
    })?;
    // Every part keeps the whole trace's name.
    let trace_name = (members.iter())
        .find(|(k, _)| k == "traceName")
        .and_then(|(_, v)| serde_json::from_str::<String>(v.as_deref()?).ok())
        .unwrap_or_else(|| output.display().to_string());
    let frame = Frame::new(
        members.iter().map(|(k, v)| (k.as_str(), v.as_deref())),
        &trace_name,
    );
    let fixed = (frame.head().len() + frame.tail().len()) as u64 + header_bytes;
    if fixed >= max_bytes {
        return Err(Error::Usage(format!(
            "--max-size {max_bytes} bytes: the metadata every part repeats takes {fixed} bytes already"
        )));
    }
    let cuts = cut_points(&mut timed, max_bytes - fixed)?;
    drop(timed);
    let part_of = |ts: f64| cuts.partition_point(|c| *c <= ts);
    // The flows kept: all their events in one part.
    let (mut cut_flows, mut cut_flow_events) = (0, 0);
    let mut kept_flows = std::collections::HashSet::new();
    for (key, times) in flows {
        let first = part_of(times[0]);
        if times.iter().all(|t| part_of(*t) == first) {
            kept_flows.insert(key);
        } else {
            cut_flows += 1;
            cut_flow_events += times.len() as u64;
        }
    }

    // Pass 2: every part written at once, the header first.
    let parts = cuts.len() + 1;
    let gzip = output.extension().is_some_and(|e| e == "gz");
    let mut writers: Vec<PartWriter> = (0..parts)
        .map(|k| PartWriter::create(part_path(output, k), gzip, &frame))
        .collect::<Result<_>>()?;
    let mut ignored = Vec::new();
    read_trace(whole, &mut ignored, &mut |raw| {
        match kind(raw)? {
            Kind::Header => {
                for w in &mut writers {
                    w.event(raw, None)?;
                }
            }
            Kind::Flow(key, ts) => {
                if kept_flows.contains(&key) {
                    writers[part_of(ts)].event(raw, Some(ts))?;
                }
            }
            Kind::Timed(ts) => writers[part_of(ts)].event(raw, Some(ts))?,
        }
        Ok(())
    })?;
    let mut written = Vec::with_capacity(parts);
    for w in writers {
        written.push(w.finish(&frame, header_events)?);
    }
    let index = index_path(output);
    let listing = serde_json::json!({
        "max_size": max_bytes,
        "cut_flows": cut_flows,
        "cut_flow_events": cut_flow_events,
        "parts": written.iter().map(|p| serde_json::json!({
            "file": p.file.file_name().map(|n| n.to_string_lossy().into_owned()),
            "start_us": p.start_us,
            "last_us": p.last_us,
            "events": p.events,
            "bytes": p.bytes,
        })).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&listing).unwrap_or_default() + "\n";
    crate::file::write_atomically(&index, |out| {
        out.write_all(text.as_bytes())
            .map_err(|e| Error::io(&index, e))
    })?;
    Ok(SplitSummary {
        parts: written,
        index,
        cut_flows,
        cut_flow_events,
    })
}

/// The start times at which parts begin after the first (ascending): greedy, each part as
/// full as `budget` bytes allow; events that start at the same time stay together.
fn cut_points(timed: &mut [(f64, u32)], budget: u64) -> Result<Vec<f64>> {
    timed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut cuts = Vec::new();
    let mut used = 0u64;
    let mut i = 0;
    while i < timed.len() {
        let ts = timed[i].0;
        let mut group = 0u64;
        let mut j = i;
        while j < timed.len() && timed[j].0 == ts {
            group += u64::from(timed[j].1);
            j += 1;
        }
        if group > budget {
            return Err(Error::Usage(format!(
                "--max-size: the events starting at {ts} µs take {group} bytes beside the \
                 metadata, more than a part holds"
            )));
        }
        if used + group > budget && used > 0 {
            cuts.push(ts);
            used = 0;
        }
        used += group;
        i = j;
    }
    Ok(cuts)
}

/// One part being written.
struct PartWriter {
    path: PathBuf,
    file: AtomicFile,
    out: BufWriter<PartOut>,
    events: u64,
    bytes: u64,
    range: Option<(f64, f64)>,
}

impl PartWriter {
    fn create(path: PathBuf, gzip: bool, frame: &Frame) -> Result<PartWriter> {
        let mut file = AtomicFile::create(&path)?;
        let handle = file.file().try_clone().map_err(|e| Error::io(&path, e))?;
        let inner = match gzip {
            true => PartOut::Gzip(Box::new(flate2::write::GzEncoder::new(
                handle,
                flate2::Compression::fast(),
            ))),
            false => PartOut::Plain(handle),
        };
        let mut w = PartWriter {
            path,
            file,
            out: BufWriter::with_capacity(1 << 20, inner),
            events: 0,
            bytes: 0,
            range: None,
        };
        w.write(frame.head())?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.bytes += bytes.len() as u64;
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, e))
    }

    fn event(&mut self, raw: &str, ts: Option<f64>) -> Result<()> {
        if self.events > 0 {
            self.write(Frame::SEPARATOR)?;
        }
        self.events += 1;
        self.write(raw.as_bytes())?;
        if let Some(ts) = ts {
            let (lo, hi) = self.range.get_or_insert((ts, ts));
            *lo = lo.min(ts);
            *hi = hi.max(ts);
        }
        Ok(())
    }

    fn finish(mut self, frame: &Frame, header_events: u64) -> Result<Part> {
        self.write(frame.tail())?;
        let io = |e| Error::io(&self.path, e);
        match self.out.into_inner().map_err(|e| io(e.into_error()))? {
            PartOut::Plain(mut f) => f.flush().map_err(io)?,
            PartOut::Gzip(g) => g.finish().and_then(|mut f| f.flush()).map_err(io)?,
        }
        self.file.commit()?;
        let (start_us, last_us) = self.range.unwrap_or((0.0, 0.0));
        Ok(Part {
            file: self.path,
            start_us,
            last_us,
            events: self.events - header_events.min(self.events),
            bytes: self.bytes,
        })
    }
}

/// A part's file, plain or gzipped.
enum PartOut {
    Plain(std::fs::File),
    Gzip(Box<flate2::write::GzEncoder<std::fs::File>>),
}

impl Write for PartOut {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            PartOut::Plain(f) => f.write(buf),
            PartOut::Gzip(g) => g.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            PartOut::Plain(f) => f.flush(),
            PartOut::Gzip(g) => g.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_names_are_read_as_users_write_them() {
        assert_eq!(parse_size("500MB").unwrap(), 500_000_000);
        assert_eq!(parse_size("1.5GB").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("2MiB").unwrap(), 2 << 20);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("lots").is_err());
        assert_eq!(
            part_path(Path::new("d/trace.json.gz"), 0),
            PathBuf::from("d/trace.part001.json.gz")
        );
        assert_eq!(
            index_path(Path::new("d/t.json")),
            PathBuf::from("d/t.parts.json")
        );
    }

    #[test]
    fn cuts_keep_each_part_under_budget_and_ties_together() {
        let mut timed = vec![(1.0, 40), (2.0, 40), (2.0, 40), (3.0, 40), (4.0, 10)];
        assert_eq!(cut_points(&mut timed, 100).unwrap(), vec![2.0, 3.0]);
        assert!(cut_points(&mut timed, 50).is_err());
    }
}
