//! Stage `export`: run the `sql/export/` plans of one window and stream their batches, with
//! the CPU trace's own events, into a sink.
//!
//! In: a [`Window`] (one window, with its `cpu_trace.json.gz`). Out: a Chrome trace JSON
//! document equal to the reference exporter's (`merge_trace_window_into_chrome_trace`),
//! written atomically, gzipped when the output name ends in `.gz`.

mod filter;
mod manifest;
mod pftrace;
mod segments;
mod shared_rows;
mod trace_doc;
mod udf;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, Int64Array, RecordBatch};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

pub use filter::{RowFilter, PREDICATE_COLUMNS};
pub use pftrace::{export_pftrace, PftraceConfig};
pub use trace_doc::TraceDoc;

use self::manifest::{chrome_section, Section};
use self::segments::{Job, Segment, SegmentSink};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::{Frame, Span};
use crate::sql::EXPORT;
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
}

/// The plans that read the widest shared rows, run one after another in this order (not the
/// document's): the readers of `_chrome_api_row`, so that those rows are freed before
/// `_chrome_gpu_row`'s are computed, then the readers of `_chrome_gpu_row`. The two are the
/// largest row sets an export holds; never holding both at once bounds its memory. The
/// other plans stream and run beside these, as many at a time as there are cores.
const SHARED_READERS: &[&str] = &[
    "chrome_api",
    "chrome_api_flow",
    "chrome_cpu_metadata",
    "chrome_metadata",
    "chrome_cuda_sync",
    "chrome_overhead",
    "chrome_gpu_flow",
    "chrome_gpu_user_annotation",
    "chrome_graph_flow",
];

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

/// The CPU trace's two readings, parsed side by side on two threads: the document split into
/// raw events (what the export copies) and the `cpu_event` table (what the plans join; it
/// holds `text` until it is dropped).
pub(crate) fn parse_cpu_trace<'a>(
    text: &'a Buffer,
    path: &'a Path,
) -> Result<(TraceDoc<'a>, RecordBatch)> {
    std::thread::scope(|scope| {
        let table = scope.spawn(|| crate::catalog::cpu_trace::parse_cpu_trace_text(text, path));
        let doc = TraceDoc::parse(text, path);
        let table = table
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok((doc?, table?))
    })
}

/// Export the window at `config.window` as a Chrome trace at `config.output`.
pub async fn export_chrome(config: &ExportConfig) -> Result<ExportSummary> {
    refuse_writing_into_inputs(&config.window, &config.output, &config.filter)?;
    write_chrome(config)
        .await
        .map_err(|e| e.at_output(&config.output))
}

async fn write_chrome(config: &ExportConfig) -> Result<ExportSummary> {
    let started = crate::profile::Clock::start();
    let (window, cpu_path, text) = open_single_window(&config.window)?;
    started.report("read the CPU trace");
    let (doc, cpu_events) = parse_cpu_trace(&text, &cpu_path)?;
    started.report("parse the CPU trace");

    let ctx = filter::open_catalog(&window, cpu_events, &config.filter).await?;
    register_export(&ctx, doc.base_ns, doc.cpu_base_ns).await?;
    filter::pair_launch_flows(&ctx, &config.filter).await?;
    started.report("plan");

    let dir = match config.output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let sink = SegmentSink {
        dir,
        gzip: config.output.extension().is_some_and(|e| e == "gz"),
    };
    // The CPU trace's own events are encoded first, so that its text (hundreds of MB on a
    // large window) is freed before the window's plans run.
    crate::profile::explain("chrome_cpu_event", async || {
        Ok(ctx.table("chrome_cpu_event").await?)
    })
    .await?;
    let cpu_rows = collect(
        &ctx,
        "SELECT event_index, leading, span_ts, span_dur FROM chrome_cpu_event \
         ORDER BY event_index",
    )
    .await?;
    release_cpu_events(&ctx, &config.filter).await?;
    let cpu = CpuSegments {
        leading: cpu_segment(&doc, &cpu_events_of(&cpu_rows, true), &sink)?,
        other: cpu_segments(&doc, &cpu_events_of(&cpu_rows, false), &sink)?,
    };
    drop(cpu_rows);
    let trace_name = config
        .trace_name
        .clone()
        .unwrap_or_else(|| config.output.display().to_string());
    let frame = Frame::new(doc.members(), &trace_name);
    drop(doc);
    drop(text);
    crate::memory::return_free_memory();
    started.report("chrome_cpu_event");

    // A --sql script's views may read any shared view at any time: then all are kept.
    let readers = match config.filter.script {
        None => {
            let mut plans = chrome_section(Section::Metadata);
            plans.extend(chrome_section(Section::Events));
            Some(shared_rows::Readers::new(&ctx, &plans).await?)
        }
        Some(_) => None,
    };
    let segments = encode_document(&ctx, cpu, readers.as_deref(), &config.window, &sink).await?;
    let events = segments.iter().map(|s| s.events).sum();
    started.report("encode");

    let mut file = AtomicFile::create(&config.output)?;
    sink.join(file.file(), &frame, segments, &config.output)?;
    file.commit()?;
    started.report("join");
    Ok(ExportSummary { events })
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

/// Free the `cpu_event` table once `_chrome_cpu_thread`, its last reader among the plans, is
/// kept (call after `chrome_cpu_event` has run). A `--sql` script's views may read it later,
/// so it stays then.
pub(crate) async fn release_cpu_events(ctx: &SessionContext, filter: &RowFilter) -> Result<()> {
    if filter.script.is_none() {
        shared_rows::keep_then_release(ctx, "_chrome_cpu_thread", "cpu_event").await?;
    }
    Ok(())
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
/// the [`SHARED_READERS`] in their order.
///
/// Each shared view's rows are freed once the last of its `readers` is done. A window
/// without a duration event is an error (naming `window`) once every event is encoded.
async fn encode_document(
    ctx: &SessionContext,
    cpu: CpuSegments,
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
        for plan in SHARED_READERS {
            done.push(run(plan).await?);
        }
        Ok(done)
    }));
    for plan in metadata.iter().chain(&events).copied() {
        if !SHARED_READERS.contains(&plan) {
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
    fill_span_bound(ctx, span).await?;
    segments.extend(segments::plan_segments(ctx.clone(), "chrome_trace_span", sink.clone()).await?);
    Ok(segments)
}

/// A CPU-trace event to copy: its place in `traceEvents`, and the (start, duration) the
/// profiler span covers, if any.
type CpuEvent = (i64, Option<(f64, f64)>);

/// The CPU trace's leading metadata events (`leading`) or its other events, in trace order;
/// `cpu_rows` are chrome_cpu_event's (event_index, leading, span_ts, span_dur) in that order.
fn cpu_events_of(cpu_rows: &[RecordBatch], leading: bool) -> Vec<CpuEvent> {
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
                events.push((index.value(row), span));
            }
        }
    }
    events
}

/// `events` copied as written into one stretch.
fn cpu_segment(doc: &TraceDoc<'_>, events: &[CpuEvent], sink: &SegmentSink) -> Result<Segment> {
    let mut writer = sink.writer()?;
    for (index, span) in events {
        writer.write_raw(doc.event(*index)?)?;
        if let Some((ts, dur)) = span {
            writer.cover(*ts, *dur);
        }
    }
    sink.finish(writer)
}

/// `events` copied as written into one stretch per core, of about equal bytes, encoded
/// (and gzipped) side by side: the CPU trace's events are hundreds of MB on a large window,
/// and nothing else runs while they are copied.
fn cpu_segments(
    doc: &TraceDoc<'_>,
    events: &[CpuEvent],
    sink: &SegmentSink,
) -> Result<Vec<Segment>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut sizes = Vec::with_capacity(events.len());
    for (index, _) in events {
        sizes.push(doc.event(*index)?.len());
    }
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
    on_threads(stretches, |stretch| cpu_segment(doc, stretch, sink))
        .into_iter()
        .collect()
}

/// `work` on each of `parts`, each on a thread of its own, side by side: the results in the
/// parts' order. A panic on a thread is raised again here.
pub(crate) fn on_threads<T: Send, R: Send>(parts: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let running: Vec<_> = (parts.into_iter())
            .map(|part| scope.spawn(move || work(part)))
            .collect();
        running
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Register what the export plans read besides the catalog (`chrome_base`, the
/// `chrome_pm_sample` unpivot, the export functions, the empty `chrome_span_bound`), then
/// the plans of `sql/export/`.
pub async fn register_export(ctx: &SessionContext, base_ns: i64, cpu_base_ns: i64) -> Result<()> {
    // Plans number rows in file order (ROW_NUMBER() OVER ()), so one file is one partition,
    // and its batches are never dealt round-robin: a filter the optimizer pushes below such a
    // window would run on the dealt batches and gather them back in arbitrary order, so the
    // numbering (and the output's order) would change from run to run.
    ctx.sql("SET datafusion.optimizer.repartition_file_scans = false")
        .await?;
    ctx.sql("SET datafusion.optimizer.enable_round_robin_repartition = false")
        .await?;
    // Joins build their hash table on the side estimated smaller. The export's filters keep
    // most rows (API calls not on the blocklist, ops with a graph node, ...), so the default
    // guess that a filter keeps 20% made filtered wide inputs (the API calls) look small and
    // be held whole as the table.
    ctx.sql("SET datafusion.optimizer.default_filter_selectivity = 100")
        .await?;
    for udf in udf::export_udfs() {
        ctx.register_udf(udf);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("base_ns", DataType::Int64, false),
        Field::new("cpu_base_ns", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![base_ns])),
            Arc::new(Int64Array::from(vec![cpu_base_ns])),
        ],
    )?;
    ctx.register_table(
        "chrome_base",
        Arc::new(MemTable::try_new(schema, vec![vec![batch]])?),
    )?;
    ctx.register_table(
        SPAN_BOUND,
        Arc::new(MemTable::try_new(span_bound_schema(), vec![vec![]])?),
    )?;
    ctx.sql(&pm_sample_view(ctx).await?).await?;
    for object in EXPORT {
        ctx.sql(object.text)
            .await
            .map_err(|e| Error::Internal(format!("sql/{}: {}", object.path, Error::from(e))))?;
        if manifest::is_held(object.name) {
            shared_rows::share(ctx, object.name).await?;
        }
    }
    Ok(())
}

/// The table `chrome_trace_span` reads its extent from: empty until the export fills it.
const SPAN_BOUND: &str = "chrome_span_bound";

fn span_bound_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("min_ts", DataType::Float64, false),
        Field::new("max_end", DataType::Float64, false),
    ]))
}

/// Put `span` into `chrome_span_bound` (its only row). The table is filled in place: the
/// `chrome_trace_span` view holds the table registered with it.
async fn fill_span_bound(ctx: &SessionContext, span: Span) -> Result<()> {
    let table = ctx.table_provider(SPAN_BOUND).await?;
    let table = (table.as_ref() as &dyn std::any::Any)
        .downcast_ref::<MemTable>()
        .expect("register_export registers chrome_span_bound as a MemTable");
    let batch = RecordBatch::try_new(
        span_bound_schema(),
        vec![
            Arc::new(Float64Array::from(vec![span.min_ts])),
            Arc::new(Float64Array::from(vec![span.max_end])),
        ],
    )?;
    *table.batches[0].write().await = vec![batch];
    Ok(())
}

/// `chrome_pm_sample`: pm_sampling's metric columns (every column but start_ns and
/// device_id, in file order: `metric_index`) unpivoted to one row per sample and metric
/// (`ord`: the row's place in the file).
async fn pm_sample_view(ctx: &SessionContext) -> Result<String> {
    let schema = ctx.table("pm_sampling").await?.schema().as_arrow().clone();
    let selects: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name())
        .filter(|n| *n != "start_ns" && *n != "device_id")
        .enumerate()
        .map(|(index, metric)| {
            format!(
                "SELECT device_id, start_ns, '{}' AS metric, CAST(\"{}\" AS DOUBLE) AS value, \
                 {index} AS metric_index, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord \
                 FROM pm_sampling",
                metric.replace('\'', "''"),
                metric.replace('"', "\"\"")
            )
        })
        .collect();
    let body = if selects.is_empty() {
        "SELECT CAST(NULL AS BIGINT) AS device_id, CAST(NULL AS BIGINT) AS start_ns, \
         CAST(NULL AS VARCHAR) AS metric, CAST(NULL AS DOUBLE) AS value, \
         0 AS metric_index, CAST(0 AS BIGINT) AS ord WHERE false"
            .to_string()
    } else {
        selects.join(" UNION ALL ")
    };
    Ok(format!("CREATE OR REPLACE VIEW chrome_pm_sample AS {body}"))
}

async fn collect(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    Ok(ctx.sql(sql).await?.collect().await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_readers_are_document_plans_each_once() {
        let mut document = chrome_section(Section::Metadata);
        document.extend(chrome_section(Section::Events));
        for plan in SHARED_READERS {
            assert!(document.contains(plan), "{plan} is not in the document");
            let runs = SHARED_READERS.iter().filter(|p| *p == plan).count();
            assert_eq!(runs, 1, "{plan} runs {runs} times");
        }
        let mut unique = document.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            document.len(),
            "a plan is in the document twice"
        );
    }
}
