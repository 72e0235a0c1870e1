//! `convert --cluster`: an archive's windows as the partitions of one plan. The client
//! registers a [`ConvertTable`] (the job: archive, output folder, formats, windows) and runs
//! `SELECT * FROM` it; the logical codec ships the job to the scheduler, whose scan is a
//! [`ConvertExec`] with one partition per window; the physical codec ships that to the
//! executors, and each task converts its window with the local `convert` stage (atomic
//! outputs, up-to-date outputs skipped, a failure is that window's row, not an error).
//!
//! In: a [`ConvertConfig`] and its windows. Out: a [`ConvertSummary`], one report per window.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ballista::prelude::SessionContextExt;
use datafusion::arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use futures::{stream, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::{session_config, Endpoint};
use crate::convert::{ConvertConfig, ConvertSummary, Outcome, TraceFormat, WindowReport};
use crate::error::Error;
use crate::window::WindowDir;
use crate::Result;

/// One conversion, as it travels: everything a task needs to convert window `i`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvertJob {
    pub archive: PathBuf,
    pub output: PathBuf,
    /// `chrome`, `perfetto`
    pub formats: Vec<String>,
    pub force: bool,
    /// Per window: its folder and its partition folders (`(key, value)`).
    pub windows: Vec<(PathBuf, Vec<(String, String)>)>,
    /// When the client submitted the job (ms since the epoch). Ballista may run a window's
    /// task twice (seen on 55.0.0: every partition of the stage ran twice); an output
    /// written since then by this job is reported as converted, not up to date.
    pub submitted_ms: u64,
}

impl ConvertJob {
    fn config(&self) -> ConvertConfig {
        ConvertConfig {
            archive: self.archive.clone(),
            output: self.output.clone(),
            formats: self
                .formats
                .iter()
                .map(|f| match f.as_str() {
                    "perfetto" => TraceFormat::Perfetto,
                    _ => TraceFormat::Chrome,
                })
                .collect(),
            jobs: 1,
            force: self.force,
            max_size: None,
        }
    }

    /// Convert window `i` here; its result row.
    async fn run(&self, i: usize, schema: SchemaRef) -> DfResult<RecordBatch> {
        let (path, partitions) = &self.windows[i];
        count_started(&self.output);
        let window = WindowDir {
            path: path.clone(),
            partitions: partitions.clone(),
            table_files: Vec::new(),
            cpu_trace: None,
            warnings: Vec::new(),
        };
        let config = self.config();
        let noop: Arc<dyn Fn(&WindowReport) + Send + Sync> = Arc::new(|_| {});
        let cancel = Arc::new(AtomicBool::new(false));
        let (outcome, outputs, events) =
            match crate::convert::convert(&config, vec![window], cancel, noop).await {
                Ok(mut summary) if !summary.reports.is_empty() => {
                    let report = summary.reports.remove(0);
                    (report.outcome, report.outputs, report.events)
                }
                Ok(_) => (Outcome::Failed("not converted".into()), Vec::new(), 0),
                Err(e) => (Outcome::Failed(e.to_string()), Vec::new(), 0),
            };
        // Ballista reruns a task whose executor was lost; the rerun finds the outputs the
        // lost run wrote up to date. Written since the job was submitted: converted.
        let by_this_job = !outputs.is_empty()
            && outputs.iter().all(|o| {
                std::fs::metadata(config.output.join(o))
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| millis(t) >= self.submitted_ms)
            });
        let outcome = match outcome {
            Outcome::UpToDate if by_this_job && !self.force => Outcome::Converted,
            other => other,
        };
        let bytes: u64 = outputs
            .iter()
            .filter_map(|o| std::fs::metadata(config.output.join(o)).ok())
            .map(|m| m.len())
            .sum();
        let (status, reason) = match outcome {
            Outcome::Converted => ("converted", None),
            Outcome::UpToDate => ("up to date", None),
            Outcome::Failed(reason) => ("failed", Some(reason)),
        };
        // Events are counted as they are written: none for outputs this run left alone.
        let events = (events > 0).then_some(events as i64);
        let outputs: Vec<String> = outputs.iter().map(|o| o.display().to_string()).collect();
        let text = |v: Option<String>| Arc::new(StringArray::from(vec![v]));
        Ok(RecordBatch::try_new(
            schema,
            vec![
                text(Some(path.display().to_string())),
                text(Some(outputs.join(","))),
                Arc::new(Int64Array::from(vec![events])),
                Arc::new(Int64Array::from(vec![bytes as i64])),
                text(Some(status.to_string())),
                text(reason),
                Arc::new(Int64Array::from(vec![i64::from(std::process::id())])),
            ],
        )?)
    }
}

fn millis(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Window conversions started in this process, per output folder (what a test of the
/// in-process cluster counts: each window converts once).
static STARTED: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());

fn count_started(output: &Path) {
    let mut started = STARTED.lock().expect("the counter lock is never poisoned");
    match started.iter_mut().find(|(o, _)| o == output) {
        Some((_, n)) => *n += 1,
        None => started.push((output.to_path_buf(), 1)),
    }
}

/// How many window conversions the tasks run in this process have started for the output
/// folder `output` (absolute, as the job carries it).
pub fn conversions_started(output: &Path) -> usize {
    let started = STARTED.lock().expect("the counter lock is never poisoned");
    started
        .iter()
        .find(|(o, _)| o == output)
        .map_or(0, |(_, n)| *n)
}

/// The rows of a cluster conversion, one per window.
pub fn result_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        // the window folder
        Field::new("window", DataType::Utf8, false),
        // its outputs, relative to the output folder, comma-separated
        Field::new("outputs", DataType::Utf8, false),
        // events written (over its outputs), NULL when none was written
        Field::new("events", DataType::Int64, true),
        // bytes of its outputs
        Field::new("bytes", DataType::Int64, false),
        // converted, up to date, failed
        Field::new("status", DataType::Utf8, false),
        // why it failed (one line), NULL otherwise
        Field::new("reason", DataType::Utf8, true),
        // the process id of the executor that ran it
        Field::new("executor_pid", DataType::Int64, false),
    ]))
}

/// The job as a table: its scan converts (once per query).
#[derive(Debug)]
pub struct ConvertTable {
    pub job: Arc<ConvertJob>,
}

#[async_trait]
impl TableProvider for ConvertTable {
    fn schema(&self) -> SchemaRef {
        result_schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let windows = item_scan(self.job.windows.len())?;
        Ok(Arc::new(ConvertExec::new(self.job.clone(), windows)))
    }
}

/// A scan of the numbers `0..n`, one partition (and one row) each: the input of the
/// operators that do one item of work per row ([`ConvertExec`], the cluster's `cpu_event`
/// scan). Ballista gives each task its share of a stage by restricting the stage's leaves
/// to the task's partitions, and it knows how to restrict this scan (an in-memory
/// `DataSourceExec`), not a leaf of ours: with `ConvertExec` as the leaf, each of the
/// first tasks ran every window's conversion (issue #20: "each convert task runs twice").
pub fn item_scan(n: usize) -> DfResult<Arc<dyn ExecutionPlan>> {
    let schema = item_schema();
    let partitions = (0..n as i64)
        .map(|i| {
            let column = Arc::new(Int64Array::from(vec![i]));
            Ok(vec![RecordBatch::try_new(schema.clone(), vec![column])?])
        })
        .collect::<DfResult<Vec<_>>>()?;
    let scan = MemorySourceConfig::try_new_exec(&partitions, schema, None)?;
    Ok(scan)
}

fn item_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "item",
        DataType::Int64,
        false,
    )]))
}

/// The item numbers of an [`item_scan`] partition's batches.
pub fn items(batch: &RecordBatch) -> DfResult<Vec<usize>> {
    let column = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or_else(|| DataFusionError::Internal("an item scan's column is Int64".into()))?;
    Ok(column.values().iter().map(|&i| i as usize).collect())
}

/// Per input row `i` (an [`item_scan`] of the job's windows): convert window `i` where the
/// task runs, and return its result row. Partition for partition, as its input.
#[derive(Debug)]
pub struct ConvertExec {
    pub job: Arc<ConvertJob>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl ConvertExec {
    pub fn new(job: Arc<ConvertJob>, input: Arc<dyn ExecutionPlan>) -> Self {
        let partitions = input.properties().output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(result_schema()),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        ConvertExec {
            job,
            input,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for ConvertExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "ConvertExec: windows={} output={}",
            self.job.windows.len(),
            self.job.output.display()
        )
    }
}

impl ExecutionPlan for ConvertExec {
    fn name(&self) -> &str {
        "ConvertExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = crate::engine::one_input(self.name(), children)?;
        Ok(Arc::new(ConvertExec::new(self.job.clone(), input)))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let job = self.job.clone();
        let schema = result_schema();
        let input = self.input.execute(partition, context)?;
        let rows = input
            .map(|batch| batch.and_then(|b| items(&b)))
            .map_ok(|items| stream::iter(items.into_iter().map(Ok::<_, DataFusionError>)))
            .try_flatten()
            .and_then({
                let schema = schema.clone();
                move |i| {
                    let (job, schema) = (job.clone(), schema.clone());
                    async move {
                        if i >= job.windows.len() {
                            return Err(DataFusionError::Internal(format!(
                                "convert: no window {i} in a job of {}",
                                job.windows.len()
                            )));
                        }
                        job.run(i, schema).await
                    }
                }
            });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, rows)))
    }
}

/// The job's JSON, as both codecs ship it.
pub fn encode(job: &ConvertJob) -> DfResult<Vec<u8>> {
    serde_json::to_vec(job).map_err(|e| DataFusionError::External(e.into()))
}

pub fn decode(bytes: &[u8]) -> DfResult<Arc<ConvertJob>> {
    serde_json::from_slice(bytes)
        .map(Arc::new)
        .map_err(|e| DataFusionError::External(e.into()))
}

/// Convert `windows` on the cluster at `endpoint`; `on_done` hears of each window once the
/// cluster has returned it.
pub async fn convert(
    endpoint: &Endpoint,
    config: &ConvertConfig,
    windows: Vec<WindowDir>,
    on_done: Arc<dyn Fn(&WindowReport) + Send + Sync>,
) -> Result<ConvertSummary> {
    crate::file::refuse_writing_into(&config.output, &[&config.archive], "--output")?;
    endpoint.check_reachable().await?;
    let absolute = |p: &std::path::Path| std::path::absolute(p).map_err(|e| Error::io(p, e));
    let job = ConvertJob {
        archive: absolute(&config.archive)?,
        output: absolute(&config.output)?,
        formats: config
            .formats
            .iter()
            .map(|f| match f {
                TraceFormat::Chrome => "chrome".to_string(),
                TraceFormat::Perfetto => "perfetto".to_string(),
            })
            .collect(),
        force: config.force,
        windows: windows
            .iter()
            .map(|w| Ok((absolute(&w.path)?, w.partitions.clone())))
            .collect::<Result<_>>()?,
        submitted_ms: millis(std::time::SystemTime::now()),
    };
    let state = SessionStateBuilder::new()
        .with_default_features()
        .with_config(session_config())
        .build();
    let ctx = SessionContext::remote_with_state(&format!("df://{endpoint}"), state).await?;
    ctx.register_table("convert_job", Arc::new(ConvertTable { job: Arc::new(job) }))?;
    let batches = ctx
        .sql("SELECT * FROM convert_job ORDER BY window")
        .await?
        .collect()
        .await?;
    let mut by_window = std::collections::HashMap::new();
    for batch in &batches {
        let text = |c: usize| {
            batch
                .column(c)
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("the result schema's text columns")
                .clone()
        };
        let events = batch
            .column(2)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("the result schema's events column")
            .clone();
        let (window, outputs, status, reason) = (text(0), text(1), text(4), text(5));
        for row in 0..batch.num_rows() {
            let outcome = match status.value(row) {
                "converted" => Outcome::Converted,
                "up to date" => Outcome::UpToDate,
                _ => Outcome::Failed(reason.value(row).to_string()),
            };
            let outputs = outputs
                .value(row)
                .split(',')
                .filter(|o| !o.is_empty())
                .map(PathBuf::from)
                .collect();
            let events = if events.is_null(row) {
                0
            } else {
                events.value(row) as u64
            };
            by_window.insert(PathBuf::from(window.value(row)), (outputs, outcome, events));
        }
    }
    let mut summary = ConvertSummary::default();
    for w in &windows {
        let key = absolute(&w.path)?;
        let (outputs, outcome, events) = by_window.remove(&key).unwrap_or_else(|| {
            (
                Vec::new(),
                Outcome::Failed("no result from the cluster".into()),
                0,
            )
        });
        let report = WindowReport {
            window: w.path.clone(),
            outputs,
            outcome,
            events,
        };
        on_done(&report);
        summary.reports.push(report);
    }
    Ok(summary)
}
