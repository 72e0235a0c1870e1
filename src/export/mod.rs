//! Stage `export`: run the `sql/export/` plans of one window and stream their batches, with
//! the CPU trace's own events, into a sink.
//!
//! In: a [`Window`] (one window, with its `cpu_trace.json.gz`). Out: a Chrome trace JSON
//! document equal to the reference exporter's (`merge_trace_window_into_chrome_trace`),
//! written atomically, gzipped when the output name ends in `.gz`.

mod align;
mod critical_path;
mod filter;
mod manifest;
mod merge;
mod merge_pftrace;
mod pftrace;
mod segments;
mod session;
mod shared_rows;
pub mod split;
mod split_pftrace;
mod udf;

use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::prelude::SessionContext;

pub use align::Offset;
pub use filter::{RowFilter, PREDICATE_COLUMNS};
pub use merge::{
    export_merged_chrome, export_merged_chrome_split, Align, MergeConfig, MergeSummary,
    MergedWindow, Piece,
};
pub use merge_pftrace::export_merged_pftrace;
pub use pftrace::{export_pftrace, PftraceConfig};
pub use session::plan_session;
pub use split_pftrace::{export_merged_pftrace_split, export_pftrace_split};

use self::manifest::{chrome_section, Section};
use self::segments::{Job, Segment, SegmentSink};
use self::session::{ExportSession, TraceBase};
use crate::catalog::cpu_trace::read_cpu_trace;
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::{Frame, Span};
use crate::window::Window;
use crate::Result;

/// What to export and where.
#[derive(Clone, Debug, Default)]
pub struct ExportConfig {
    pub window: PathBuf,
    pub output: PathBuf,
    /// `traceName`; the output path as given when None (as the reference does).
    pub trace_name: Option<String>,
    /// what to keep of the window (everything by default)
    pub filter: RowFilter,
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportSummary {
    pub events: u64,
    /// the document's bytes before compression (Chrome: its events'; .pftrace: its packets')
    pub bytes: Option<u64>,
}

/// The Chrome plans that read held rows, in the order they run one after another (the
/// manifest's rule): those reading a `readers_first` view (`_chrome_api_row`) go first, and
/// once a plan has run, the other readers of the held views it read run next (in document
/// order), so that each held view's rows are freed as soon as they can be. So the API rows
/// are freed before `_chrome_gpu_row`'s are computed (the two largest row sets an export
/// holds, never held at once), and the GPU rows before the graph edges' are (run in document
/// order instead, the GPU rows stayed held beside the graph edges: 10 M .json.gz peak
/// 0.95 -> 1.11 GB). The other plans stream and run beside these, as many at a time as there
/// are cores.
async fn serial_plans(
    ctx: &SessionContext,
    document: &[&'static str],
) -> Result<Vec<&'static str>> {
    let (mut first, mut then) = (Vec::new(), Vec::new());
    for plan in document {
        let reads = shared_rows::held_reads(ctx, plan).await?;
        if reads
            .iter()
            .any(|r| manifest::held(r).is_some_and(|h| h.readers_first))
        {
            first.push((*plan, reads));
        } else if !reads.is_empty() {
            then.push((*plan, reads));
        }
    }
    first.extend(then);
    let mut waiting = first;
    let mut serial = Vec::new();
    let mut open: Vec<String> = Vec::new();
    while !waiting.is_empty() {
        // the first waiting reader of a view still open, else the first waiting one
        let next = (waiting.iter())
            .position(|(_, reads)| reads.iter().any(|r| open.contains(r)))
            .unwrap_or(0);
        let (plan, reads) = waiting.remove(next);
        open.extend(reads);
        open.retain(|v| waiting.iter().any(|(_, reads)| reads.contains(v)));
        serial.push(plan);
    }
    Ok(serial)
}

/// Windows one above the other on one timeline, as one trace at `output`: Chrome JSON, or a
/// `.pftrace` exported with `pftrace`'s settings. Each piece's tracks are named after its
/// label, its clock shifted by its offset and its rows narrowed by its filter, as in a
/// merged export; `align` says how the offsets were chosen (the merge record's). What
/// `diff --timeline` writes.
pub async fn export_pieces(
    pieces: &[Piece],
    align: &str,
    output: &Path,
    pftrace: Option<&PftraceConfig>,
) -> Result<MergeSummary> {
    let written = async {
        let Some(single) = pftrace else {
            let name = output.display().to_string();
            return Ok(merge::write_pieces(pieces, align, output, &name, None)
                .await?
                .0);
        };
        let mut file = AtomicFile::create(output)?;
        let io = |e| Error::io(output, e);
        let out = file.file().try_clone().map_err(io)?;
        let mut w = crate::sink::perfetto::PftraceWriter::try_new(out, single.compression_level)?;
        let summary = merge_pftrace::write_pieces(pieces, align, single, output, &mut w).await?;
        w.finish().map_err(io)?;
        file.commit()?;
        Ok(summary)
    };
    written.await.map_err(|e: Error| e.at_output(output))
}

/// The window at `dir` (one window folder, not an archive), its CPU trace's path and the
/// trace's bytes: what every export format starts from.
pub(crate) fn open_single_window(dir: &Path) -> Result<(Window, PathBuf, Buffer)> {
    let window = Window::open(dir)?;
    if window.is_archive() {
        return Err(Error::Usage(format!(
            "{}: is an archive; export takes one window folder (e.g. {}/window_id=000001)",
            dir.display(),
            dir.display()
        )));
    }
    let cpu_path = window
        .windows
        .first()
        .and_then(|w| w.cpu_trace.clone())
        .ok_or_else(|| Error::BadCpuTrace {
            file: dir.join(crate::schema::CPU_TRACE_FILE),
            reason: "missing; export needs the window's Kineto CPU trace".into(),
        })?;
    let text = Buffer::from_vec(crate::file::read_gunzipped(&cpu_path)?);
    Ok((window, cpu_path, text))
}

/// Export the window at `config.window` as a Chrome trace at `config.output`.
pub async fn export_chrome(config: &ExportConfig) -> Result<ExportSummary> {
    refuse_writing_into_inputs(&config.window, &config.output, &config.filter)?;
    write_chrome(config)
        .await
        .map_err(|e| e.at_output(&config.output))
}

/// Export the window at `config.window` as a Chrome trace split into parts of at most
/// `max_bytes` of JSON each, named after `config.output` ([`split`]).
pub async fn export_chrome_split(
    config: &ExportConfig,
    max_bytes: u64,
) -> Result<(ExportSummary, split::SplitSummary)> {
    refuse_writing_into_inputs(&config.window, &config.output, &config.filter)?;
    write_chrome_split(config, max_bytes)
        .await
        .map_err(|e| e.at_output(&config.output))
}

async fn write_chrome_split(
    config: &ExportConfig,
    max_bytes: u64,
) -> Result<(ExportSummary, split::SplitSummary)> {
    let encoded = encode_window(&config.window, &config.filter, &config.output, true, |_| {
        Ok(None)
    })
    .await?;
    let trace_name =
        (config.trace_name.clone()).unwrap_or_else(|| config.output.display().to_string());
    let frame = Frame::new(encoded.frame_members(), &trace_name);
    let started = crate::profile::Clock::start();
    let summary = ExportSummary {
        events: encoded.events(),
        bytes: Some(encoded.bytes()),
    };
    let parts = split::write_parts(&frame, encoded.segments, &config.output, max_bytes)?;
    started.report("split");
    Ok((summary, parts))
}

async fn write_chrome(config: &ExportConfig) -> Result<ExportSummary> {
    let encoded = encode_window(
        &config.window,
        &config.filter,
        &config.output,
        false,
        |_| Ok(None),
    )
    .await?;
    let trace_name = config
        .trace_name
        .clone()
        .unwrap_or_else(|| config.output.display().to_string());
    let frame = Frame::new(encoded.frame_members(), &trace_name);
    let started = crate::profile::Clock::start();
    let mut file = AtomicFile::create(&config.output)?;
    let (events, bytes) = (encoded.events(), encoded.bytes());
    (encoded.sink).join(file.file(), &frame, encoded.segments, &config.output)?;
    file.commit()?;
    started.report("join");
    Ok(ExportSummary {
        events,
        bytes: Some(bytes),
    })
}

/// One window's events encoded, in document order, ready to be joined into a document.
pub(crate) struct EncodedWindow {
    /// the CPU trace's top-level members (key, JSON text; None: `traceEvents`'s place)
    pub members: Vec<(String, Option<String>)>,
    pub segments: Vec<Segment>,
    pub sink: SegmentSink,
}

impl EncodedWindow {
    pub fn frame_members(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        (self.members.iter()).map(|(k, v)| (k.as_str(), v.as_deref()))
    }

    pub fn events(&self) -> u64 {
        self.segments.iter().map(|s| s.events).sum()
    }

    /// The events' bytes, with their separators.
    pub fn bytes(&self) -> u64 {
        let written = self.segments.iter().filter(|s| s.events > 0);
        written.map(|s| s.bytes + 1).sum::<u64>().saturating_sub(1)
    }
}

/// The window at `dir` as `filter` narrows it, encoded into segments beside `output`
/// (marked, and cut into blocks when gzipped, for a split when `index`); `remap_for` says,
/// from the CPU trace's base, how a merged trace renames the window's events (None: as
/// they are).
pub(crate) async fn encode_window(
    dir: &Path,
    filter: &RowFilter,
    output: &Path,
    index: bool,
    remap_for: impl FnOnce(i64) -> Result<Option<std::sync::Arc<crate::sink::chrome::Remap>>>,
) -> Result<EncodedWindow> {
    let started = crate::profile::Clock::start();
    let (window, cpu_path, text) = open_single_window(dir)?;
    started.report("read the CPU trace");
    let (doc, cpu_events) = read_cpu_trace(&text, &cpu_path)?;
    started.report("parse the CPU trace");

    let base = TraceBase {
        base_ns: doc.base_ns,
        cpu_base_ns: doc.cpu_base_ns,
    };
    // The events' text is copied from these batches (their `raw`), not carried through the
    // plan: a filter's batch coalescing compacts string views, and would copy the whole
    // text (10 M .json.gz peak 0.94 -> 1.14 GB).
    let raw_events = cpu_events.clone();
    let session = ExportSession::open(&window, cpu_events, filter, base).await?;
    let ctx = &session.ctx;
    started.report("plan");

    let out_dir = crate::file::folder_of(output).to_path_buf();
    let sink = SegmentSink {
        dir: out_dir,
        gzip: output.extension().is_some_and(|e| e == "gz"),
        remap: remap_for(doc.base_ns)?,
        index,
    };
    // The CPU trace's own events are encoded first, so that its text (hundreds of MB on a
    // large window) is freed before the window's plans run.
    crate::profile::explain("chrome_cpu_event", async || {
        Ok(ctx.table("chrome_cpu_event").await?)
    })
    .await?;
    let cpu_rows = collect(
        ctx,
        "SELECT event_index, leading, span_ts, span_dur FROM chrome_cpu_event \
         ORDER BY event_index",
    )
    .await?;
    session.release_cpu_events(filter).await?;
    let cpu = CpuSegments {
        leading: cpu_segment(&cpu_events_of(&raw_events, &cpu_rows, true)?, &sink)?,
        other: cpu_segments(&cpu_events_of(&raw_events, &cpu_rows, false)?, &sink)?,
    };
    drop(cpu_rows);
    drop(raw_events);
    let members = (doc.members())
        .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
        .collect();
    drop(doc);
    drop(text);
    crate::memory::return_free_memory();
    started.report("chrome_cpu_event");

    let mut document = chrome_section(Section::Metadata);
    document.extend(chrome_section(Section::Events));
    let serial = serial_plans(ctx, &document).await?;
    // A --sql script's views may read any shared view at any time: then all are kept.
    let readers = match filter.script {
        None => Some(shared_rows::Readers::new(ctx, &document).await?),
        Some(_) => None,
    };
    let segments = encode_document(&session, cpu, &serial, readers.as_deref(), dir, &sink).await?;
    started.report("encode");
    Ok(EncodedWindow {
        members,
        segments,
        sink,
    })
}

/// An export never writes into what it reads: the window, or a `--sql` script.
pub(crate) fn refuse_writing_into_inputs(
    window: &Path,
    output: &Path,
    filter: &RowFilter,
) -> Result<()> {
    let mut inputs = vec![window];
    inputs.extend(filter.script.as_deref());
    crate::file::refuse_writing_into(output, &inputs, "--output")
}

/// The CPU trace's events as segments, encoded before the window's.
struct CpuSegments {
    /// its leading metadata events
    leading: Segment,
    /// its other events, in stretches encoded side by side
    other: Vec<Segment>,
}

/// The document's events, in segments in document order: the CPU trace's leading metadata,
/// the window's metadata, the CPU trace's other events, the window's events, the profiler
/// span over all of them (measured by the writers as they go). The plans run in parallel,
/// the `serial` ones one after another in their order.
///
/// Each shared view's rows are freed once the last of its `readers` is done. A window
/// without a duration event is an error (naming `window`) once every event is encoded.
async fn encode_document(
    session: &ExportSession,
    cpu: CpuSegments,
    serial: &[&'static str],
    readers: Option<&shared_rows::Readers>,
    window: &Path,
    sink: &SegmentSink,
) -> Result<Vec<Segment>> {
    // Each stretch's place in the document.
    let (metadata, events) = (
        chrome_section(Section::Metadata),
        chrome_section(Section::Events),
    );
    let cpu_other_slot = metadata.len() + 1;
    let slot = |plan: &str| -> usize {
        match metadata.iter().position(|p| *p == plan) {
            Some(i) => 1 + i,
            None => {
                let i = events.iter().position(|p| *p == plan);
                cpu_other_slot + 1 + i.expect("every plan run is in the metadata or events section")
            }
        }
    };
    let ctx = &session.ctx;
    let run = async |plan: &'static str| -> Result<(usize, Vec<Segment>)> {
        let segments = segments::spawned(ctx, plan, sink).await?;
        if let Some(readers) = readers {
            readers.done(plan).await?;
        }
        Ok((slot(plan), segments))
    };
    let mut jobs: Vec<Job<'_>> = Vec::new();
    jobs.push(Box::pin(std::future::ready(Ok(vec![
        (0, vec![cpu.leading]),
        (cpu_other_slot, cpu.other),
    ]))));
    jobs.push(Box::pin(async move {
        let mut done = Vec::new();
        for plan in serial.iter().copied() {
            done.push(run(plan).await?);
        }
        Ok(done)
    }));
    for plan in metadata.iter().chain(&events).copied() {
        if !serial.contains(&plan) {
            jobs.push(Box::pin(async move { Ok(vec![run(plan).await?]) }));
        }
    }
    let mut segments = segments::encode_all(jobs).await?;
    let span = segments
        .iter()
        .fold(None, |span, s| Span::merge(span, s.span))
        .ok_or_else(|| Error::EmptyWindow {
            dir: window.to_path_buf(),
        })?;
    session.give_span(span).await?;
    segments.extend(segments::plan_segments(ctx.clone(), "chrome_trace_span", sink.clone()).await?);
    Ok(segments)
}

/// A CPU-trace event to copy: its text as written, and the (start, duration) the profiler
/// span covers, if any.
type CpuEvent<'r> = (&'r str, Option<(f64, f64)>);

/// The CPU trace's leading metadata events (`leading`) or its other events, in trace order;
/// `cpu_rows` are chrome_cpu_event's (event_index, leading, span_ts, span_dur) in that
/// order, `raw_events` the cpu_event batches (in event_index order) their text is in.
fn cpu_events_of<'r>(
    raw_events: &'r [RecordBatch],
    cpu_rows: &[RecordBatch],
    leading: bool,
) -> Result<Vec<CpuEvent<'r>>> {
    let raw_column = raw_events
        .first()
        .and_then(|b| b.schema().index_of("raw").ok());
    // each batch's first event_index
    let firsts: Vec<i64> = (raw_events.iter())
        .map(|b| {
            b.column(0)
                .as_primitive::<Int64Type>()
                .values()
                .first()
                .copied()
        })
        .map(|first| first.unwrap_or(i64::MAX))
        .collect();
    let raw_of = |index: i64| -> Result<&'r str> {
        let k = firsts.partition_point(|f| *f <= index).wrapping_sub(1);
        let batch = raw_events.get(k).zip(raw_column);
        let text = batch.and_then(|(b, c)| {
            let row = usize::try_from(index - firsts[k]).ok()?;
            let raw = b.column(c).as_string_view();
            (row < raw.len()).then(|| raw.value(row))
        });
        text.ok_or_else(|| Error::Internal(format!("cpu_event: no event {index}")))
    };
    let mut events = Vec::new();
    for batch in cpu_rows {
        let index = batch.column(0).as_primitive::<Int64Type>();
        let flags = batch.column(1).as_boolean();
        let span_ts = batch.column(2).as_primitive::<Float64Type>();
        let span_dur = batch.column(3).as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            if flags.value(row) == leading {
                let span = span_ts
                    .is_valid(row)
                    .then(|| (span_ts.value(row), span_dur.value(row)));
                events.push((raw_of(index.value(row))?, span));
            }
        }
    }
    Ok(events)
}

/// `events` copied as written into one stretch.
fn cpu_segment(events: &[CpuEvent], sink: &SegmentSink) -> Result<Segment> {
    let mut writer = sink.writer()?;
    for (raw, span) in events {
        writer.write_raw(raw)?;
        if let Some((ts, dur)) = span {
            writer.cover(*ts, *dur);
        }
    }
    sink.finish(writer)
}

/// `events` copied as written into one stretch per core, of about equal bytes, encoded
/// (and gzipped) side by side: the CPU trace's events are hundreds of MB on a large window,
/// and nothing else runs while they are copied.
fn cpu_segments(events: &[CpuEvent], sink: &SegmentSink) -> Result<Vec<Segment>> {
    let cores = crate::threads::cores();
    let sizes: Vec<usize> = events.iter().map(|(raw, _)| raw.len()).collect();
    let share = sizes.iter().sum::<usize>() / cores + 1;
    let mut stretches = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, size) in sizes.iter().enumerate() {
        bytes += size;
        if bytes >= share {
            stretches.push(&events[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < events.len() || stretches.is_empty() {
        stretches.push(&events[start..]);
    }
    crate::threads::on_threads(stretches, |stretch| cpu_segment(stretch, sink))
        .into_iter()
        .collect()
}

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_api_rows_readers_run_first_and_the_readers_of_each_held_view_run_together() {
        let window = Window::empty(Path::new("/nonexistent"), vec![]);
        let ctx = plan_session(&window).await.unwrap();
        let mut document = chrome_section(Section::Metadata);
        document.extend(chrome_section(Section::Events));
        let serial = serial_plans(&ctx, &document).await.unwrap();
        let reads_of = async |plan: &str| shared_rows::held_reads(&ctx, plan).await.unwrap();
        let mut api_readers_done = false;
        for plan in &document {
            let reads = reads_of(plan).await;
            assert_eq!(
                serial.contains(plan),
                !reads.is_empty(),
                "{plan} reads {reads:?}"
            );
        }
        for plan in &serial {
            let reads_api = reads_of(plan).await.iter().any(|r| r == "_chrome_api_row");
            if !reads_api {
                api_readers_done = true;
            } else {
                assert!(
                    !api_readers_done,
                    "{plan} reads the API rows after a plan that does not"
                );
            }
        }
        // While a held view has readers both done and waiting, only its readers (or
        // readers of another such view) run.
        let mut reads = Vec::new();
        for plan in &serial {
            reads.push(reads_of(plan).await);
        }
        for i in 0..serial.len() {
            let open: Vec<&String> = (reads[..i].iter().flatten())
                .filter(|v| reads[i..].iter().any(|r| r.contains(v)))
                .collect();
            assert!(
                open.is_empty() || reads[i].iter().any(|r| open.contains(&r)),
                "{} runs while {open:?} are held: {serial:?}",
                serial[i]
            );
        }
        assert!(serial.contains(&"chrome_api") && serial.contains(&"chrome_gpu_flow"));
        let mut unique = serial.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), serial.len(), "a plan runs twice: {serial:?}");
    }
}
