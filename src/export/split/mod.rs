//! Stage `export`, split: a Chrome trace cut into numbered parts that each fit a viewer's
//! memory (`--max-size`). Each part covers a time range and is a complete trace: the whole
//! document's top-level members and every metadata (`M`) event (process and thread names,
//! sort order), then the events that start in its range. A flow (`s`/`t`/`f` events sharing
//! category, name and id) whose events fall in different parts is left out of all of them,
//! and counted. Beside the parts, `NAME.parts.json` lists each part's file, time range,
//! events and bytes.
//!
//! In: the document's segments as the export encoded them, with each event's mark (where
//! its bytes are, its `ts`, metadata or flow: [`crate::sink::chrome::index`]); no JSON is
//! parsed here. The cut points come from the marks, then each part is written, on every
//! core, from its runs: the frame, and the segments' byte ranges. Gzipped segments come
//! compressed, in blocks that each inflate alone: a block that falls whole into a part is
//! copied as it is, and only the blocks that a part boundary cuts are inflated and
//! compressed again (one gzip member per part: [`crate::file::gzip`]).
//! Out: `NAME.part001.json[.gz]`, ... and `NAME.parts.json`, each written atomically.

use std::collections::HashSet;
use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use flate2::Compression;

mod copy;
mod cuts;

pub(crate) use self::copy::{write_runs, PartRuns, Run, Source};
pub(crate) use self::cuts::{cut_points, Timed};
use super::segments::Segment;
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::{Frame, Mark, Place};
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

/// The listing's path for `output`: `trace.parts.json` (a `.pftrace`'s:
/// `trace.pftrace.parts.json`, so that a window's Chrome and Perfetto parts can sit side by
/// side).
pub fn index_path(output: &Path) -> PathBuf {
    let (stem, suffix) = stem_and_suffix(output);
    let mut name = stem.into_os_string();
    name.push(match suffix.starts_with(".pftrace") {
        true => ".pftrace.parts.json",
        false => ".parts.json",
    });
    PathBuf::from(name)
}

pub(crate) fn part_path(output: &Path, k: usize) -> PathBuf {
    let (stem, suffix) = stem_and_suffix(output);
    let mut name = stem.into_os_string();
    name.push(format!(".part{:03}{suffix}", k + 1));
    PathBuf::from(name)
}

/// Write the document `frame` frames around `segments` (uncompressed, marked) as parts
/// named after `output`, each at most `max_bytes` of uncompressed JSON (gzipped when
/// `output` ends in `.gz`), and their listing.
pub(crate) fn write_parts(
    frame: &Frame,
    segments: Vec<Segment>,
    output: &Path,
    max_bytes: u64,
) -> Result<SplitSummary> {
    let segments: Vec<Segment> = segments.into_iter().filter(|s| s.events > 0).collect();
    let mut profile = crate::profile::Clock::start();
    // The marks are read on every core, each core taking a run of neighbouring segments.
    let cores = crate::threads::cores();
    let marks: Vec<usize> = segments.iter().map(|s| s.marks.len()).collect();
    let runs = neighbours(&marks, cores);
    let gathered = crate::threads::on_threads(runs.clone(), |run| gather(&segments[run]));
    let header_bytes: u64 = gathered.iter().map(|g| g.header_bytes).sum();
    let fixed = (frame.head().len() + frame.tail().len()) as u64 + header_bytes;
    if fixed >= max_bytes {
        return Err(Error::Usage(format!(
            "--max-size {max_bytes} bytes: the metadata every part repeats takes {fixed} bytes already"
        )));
    }
    // the flow events of all segments by key (a stable sort merges the cores' sorted runs),
    // on another core while the cuts are found
    let mut flows: Vec<(u64, f64)> = gathered.into_iter().flat_map(|g| g.flows).collect();
    let timed: Vec<&[Mark]> = segments.iter().map(|s| &s.marks[..]).collect();
    let (cuts, flows) = std::thread::scope(|scope| {
        let sorted = scope.spawn(move || {
            flows.sort_by_key(|(key, _)| *key);
            flows
        });
        (cut_points(&timed, max_bytes - fixed), sorted.join())
    });
    let cuts = cuts?;
    let flows =
        flows.map_err(|_| Error::Internal("splitting: a sorting thread panicked".into()))?;
    drop(timed);
    let part_of = |ts: f64| cuts.partition_point(|c| *c <= ts);
    let (cut, cut_flows, cut_flow_events) = cut_flows(flows, part_of);
    profile.mark("split: cut points");

    // Each part's runs: the frame's head, the segments' byte ranges with separators between
    // them (placed on every core, a run of segments each), the frame's tail.
    let parts = cuts.len() + 1;
    let placed =
        crate::threads::on_threads(runs, |run| place(&segments, run, parts, &part_of, &cut));
    drop(cut);
    let mut tallies = vec![Tally::default(); parts];
    let mut plans: Vec<PartRuns> = (0..parts).map(|_| PartRuns::default()).collect();
    for plan in &mut plans {
        plan.put(frame.head());
    }
    let mut started = vec![false; parts];
    for placed in placed {
        for (k, (runs, tally)) in placed.into_iter().enumerate() {
            if runs.runs.is_empty() {
                continue;
            }
            if std::mem::replace(&mut started[k], true) {
                plans[k].put(Frame::SEPARATOR);
            }
            plans[k].runs.extend(runs.runs);
            tallies[k].merge(&tally);
        }
    }
    for plan in &mut plans {
        plan.put(frame.tail());
    }
    profile.mark("split: byte ranges");

    let gzip = output.extension().is_some_and(|e| e == "gz");
    let paths: Vec<PathBuf> = (0..parts).map(|k| part_path(output, k)).collect();
    let mut files: Vec<AtomicFile> = (paths.iter())
        .map(|p| AtomicFile::create(p))
        .collect::<Result<_>>()?;
    {
        let sources: Vec<Source> = (segments.iter())
            .map(|s| Source {
                file: &s.file,
                bytes: s.bytes,
                blocks: &s.blocks,
            })
            .collect();
        let targets: Vec<&File> = files.iter_mut().map(|f| &*f.file()).collect();
        let level = gzip.then(Compression::fast);
        write_runs(&plans, &sources, &targets, level)?;
    }
    drop(segments);
    profile.mark("split: copy");

    let mut listed = Vec::with_capacity(parts);
    for (k, (file, path)) in files.into_iter().zip(paths).enumerate() {
        file.commit()?;
        let tally = &tallies[k];
        let (start_us, last_us) = tally.range.unwrap_or((0.0, 0.0));
        listed.push(Part {
            file: path,
            start_us,
            last_us,
            events: tally.timed,
            bytes: plans[k].bytes(),
        });
    }
    let summary = write_listing(output, max_bytes, listed, cut_flows, cut_flow_events)?;
    profile.mark("split: parts renamed, listing written");
    Ok(summary)
}

/// What a run of segments' marks say beside the starts: the bytes of their metadata
/// events, each flow event's key and start (sorted by key).
struct Gathered {
    header_bytes: u64,
    flows: Vec<(u64, f64)>,
}

fn gather(segments: &[Segment]) -> Gathered {
    let mut header_bytes = 0u64;
    let mut flows: Vec<(u64, f64)> = Vec::new();
    for m in segments.iter().flat_map(|s| &s.marks) {
        match m.place {
            Place::Header => header_bytes += u64::from(m.len) + 1,
            Place::Flow(key) => flows.push((key, m.ts)),
            Place::Timed => {}
        }
    }
    flows.sort_unstable_by_key(|(key, _)| *key);
    Gathered {
        header_bytes,
        flows,
    }
}

/// A Chrome event's start and bytes (with the separator after it); metadata has none.
impl Timed for Mark {
    type Start = f64;
    fn timed(&self) -> Option<(f64, u32)> {
        (self.place != Place::Header).then_some((self.ts, self.len + 1))
    }
}

/// The segments (`marks`: each one's) in at most `n` runs of neighbours (index ranges), of
/// about equal marks each.
fn neighbours(marks: &[usize], n: usize) -> Vec<Range<usize>> {
    let total: usize = marks.iter().sum();
    let (mut runs, mut start, mut seen) = (Vec::new(), 0, 0);
    for (i, count) in marks.iter().enumerate() {
        seen += count;
        if runs.len() + 1 < n && seen * n >= total * (runs.len() + 1) {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    runs.push(start..marks.len());
    runs
}

/// The runs and tally, per part, of the segments `run` of `segments` (indices into all
/// of them): each event's byte range in the part its start falls in (`part_of`), a
/// metadata event's in every part, a cut flow's (`cut`) in none. Within a part, the runs
/// of neighbouring events of one segment are one run (the separator between them copied
/// too); the first run of a part has no separator before it.
fn place(
    segments: &[Segment],
    run: Range<usize>,
    parts: usize,
    part_of: &impl Fn(f64) -> usize,
    cut: &FlowSet,
) -> Vec<(PartRuns<'static>, Tally)> {
    let mut placed: Vec<(PartRuns<'static>, Tally)> =
        (0..parts).map(|_| Default::default()).collect();
    let gap = Frame::SEPARATOR.len() as u64;
    for s in run {
        for m in &segments[s].marks {
            let part = match m.place {
                Place::Header => None,
                Place::Flow(key) if cut.contains(&key) => continue,
                Place::Flow(_) | Place::Timed => Some(part_of(m.ts)),
            };
            let (start, end) = (m.start, m.start + u64::from(m.len));
            let mut add = |k: usize| {
                let (plan, tally) = &mut placed[k];
                match plan.runs.last() {
                    // right after the last event: the separator between them is copied too
                    Some(Run::Copy {
                        source, end: last, ..
                    }) if *source == s && *last + gap == start => {}
                    Some(_) => plan.put(Frame::SEPARATOR),
                    None => {}
                }
                plan.copy(s, start, end, gap);
                tally.add(part.map(|_| m.ts));
            };
            match part {
                None => (0..parts).for_each(&mut add),
                Some(k) => add(k),
            }
        }
    }
    placed
}

/// The keys of the flows cut (flow keys are hashes already: a fast fixed hash of them).
type FlowSet = HashSet<u64, foldhash::fast::FixedState>;

/// The flows cut (their events in more than one part), how many, and their events, from
/// the flow events sorted by key (few flows are cut: a set of them is small).
fn cut_flows(flows: Vec<(u64, f64)>, part_of: impl Fn(f64) -> usize) -> (FlowSet, u64, u64) {
    let (mut cut, mut cut_flow_events) = (FlowSet::default(), 0);
    for events in flows.chunk_by(|a, b| a.0 == b.0) {
        let first = part_of(events[0].1);
        if events.iter().any(|(_, ts)| part_of(*ts) != first) {
            cut.insert(events[0].0);
            cut_flow_events += events.len() as u64;
        }
    }
    let cut_flows = cut.len() as u64;
    (cut, cut_flows, cut_flow_events)
}

/// What one part holds.
#[derive(Clone, Debug, Default)]
struct Tally {
    /// its events that are not metadata
    timed: u64,
    /// their least and greatest starts
    range: Option<(f64, f64)>,
}

impl Tally {
    fn merge(&mut self, other: &Tally) {
        self.timed += other.timed;
        if let Some((lo, hi)) = other.range {
            let (l, h) = self.range.get_or_insert((lo, hi));
            *l = l.min(lo);
            *h = h.max(hi);
        }
    }

    fn add(&mut self, ts: Option<f64>) {
        if let Some(ts) = ts {
            self.timed += 1;
            let (lo, hi) = self.range.get_or_insert((ts, ts));
            *lo = lo.min(ts);
            *hi = hi.max(ts);
        }
    }
}

/// Write the listing `NAME.parts.json` of `parts`.
pub(crate) fn write_listing(
    output: &Path,
    max_bytes: u64,
    parts: Vec<Part>,
    cut_flows: u64,
    cut_flow_events: u64,
) -> Result<SplitSummary> {
    let index = index_path(output);
    let listing = serde_json::json!({
        "max_size": max_bytes,
        "cut_flows": cut_flows,
        "cut_flow_events": cut_flow_events,
        "parts": parts.iter().map(|p| serde_json::json!({
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
        parts,
        index,
        cut_flows,
        cut_flow_events,
    })
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
        assert_eq!(
            index_path(Path::new("d/t.pftrace")),
            PathBuf::from("d/t.pftrace.parts.json")
        );
        assert_eq!(
            part_path(Path::new("t.pftrace"), 11),
            PathBuf::from("t.part012.pftrace")
        );
    }

    #[test]
    fn segments_are_shared_out_in_runs_of_neighbours_of_about_equal_marks() {
        assert_eq!(neighbours(&[10, 10, 10, 10], 2), [0..2, 2..4]);
        assert_eq!(neighbours(&[30, 1, 1, 1, 1], 2), [0..1, 1..5]);
        assert_eq!(neighbours(&[5, 5], 1), vec![(0..2)]);
        assert_eq!(neighbours(&[], 2), vec![(0..0)]);
        assert_eq!(neighbours(&[0, 0, 0], 2), [0..1, 1..3]);
        for n in 1..5 {
            let marks = [7, 0, 3, 12, 1, 1, 9];
            let runs = neighbours(&marks, n);
            assert!(runs.len() <= n);
            // in order, next to each other, covering all
            assert_eq!(runs[0].start, 0);
            assert_eq!(runs.last().unwrap().end, marks.len());
            assert!(runs.windows(2).all(|w| w[0].end == w[1].start));
        }
    }
}
