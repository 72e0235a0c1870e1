//! Stage `register`, streaming side: a large nsys table (kernels, API calls, ...) as a
//! DataFusion table that is never held whole. In: a [`SqliteTable`] the loader checked. Out:
//! scans whose batches come, in rowid order, from one reader thread per table.
//!
//! Each scan planned is a consumer with its own bounded channel; [`pump`] then starts one
//! reader per table that has consumers, which reads the union of their columns once and hands
//! every batch to each of them (the runtime table feeds both `cuda_runtime` and `cuda_driver`
//! from one read). Planning and pumping come in rounds: plan every query of a round, pump,
//! run them all concurrently (a consumer that is not drained stalls its table's reader).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use tokio::sync::mpsc;

use super::load::{schema_of, SqliteTable};
use crate::error::Error;
use crate::Result;

/// Rows per batch a reader sends: small enough that the batches in flight (two per
/// consumer) stay a few MB, large enough that per-batch work does not show.
pub const BATCH_ROWS: usize = 16384;
/// Batches a consumer's channel holds before its table's reader waits.
const CHANNEL_BATCHES: usize = 2;

type Item = DfResult<RecordBatch>;

/// One planned scan: the table's columns it reads (declared indices) and where its batches go.
struct Consumer {
    columns: Vec<usize>,
    tx: mpsc::Sender<Item>,
}

/// A streamed table, registered under nsys's name.
pub struct FeedTable {
    table: Arc<SqliteTable>,
    schema: SchemaRef,
    waiting: Mutex<Vec<Consumer>>,
}

impl fmt::Debug for FeedTable {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "FeedTable({})", self.table.source().name)
    }
}

impl FeedTable {
    pub fn new(table: Arc<SqliteTable>) -> Self {
        FeedTable {
            schema: schema_of(table.source()),
            table,
            waiting: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl TableProvider for FeedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let columns: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let schema = Arc::new(self.schema.project(&columns)?);
        let (tx, rx) = mpsc::channel(CHANNEL_BATCHES);
        self.waiting
            .lock()
            .expect("a planner thread panicked")
            .push(Consumer { columns, tx });
        Ok(Arc::new(FeedExec::new(
            self.table.source().name,
            schema,
            self.table.rows(),
            rx,
        )))
    }
}

/// The readers of one round. [`Pump::finish`] waits for them and returns the first read
/// error (a damaged page, say): a consumer may have seen its stream end early without one.
pub struct Pump {
    threads: Vec<JoinHandle<()>>,
    error: Arc<Mutex<Option<Error>>>,
}

/// Start a reader for every table in `feeds` with planned scans (those planned later wait
/// for the next round).
pub fn pump(feeds: &[Arc<FeedTable>]) -> Pump {
    let error: Arc<Mutex<Option<Error>>> = Arc::new(Mutex::new(None));
    let mut threads = Vec::new();
    for feed in feeds {
        let consumers =
            std::mem::take(&mut *feed.waiting.lock().expect("a planner thread panicked"));
        if consumers.is_empty() {
            continue;
        }
        let table = feed.table.clone();
        let error = error.clone();
        threads.push(std::thread::spawn(move || {
            read_into(&table, consumers, &error)
        }));
    }
    Pump { threads, error }
}

/// Read the union of the consumers' columns once, in batches, projecting each batch for
/// each consumer; stop when none is left listening.
fn read_into(table: &SqliteTable, consumers: Vec<Consumer>, error: &Mutex<Option<Error>>) {
    let mut union: Vec<usize> = consumers.iter().flat_map(|c| c.columns.clone()).collect();
    union.sort_unstable();
    union.dedup();
    let picks: Vec<Vec<usize>> = consumers
        .iter()
        .map(|c| {
            c.columns
                .iter()
                .map(|col| union.binary_search(col).expect("the union holds it"))
                .collect()
        })
        .collect();
    let result = table.read(&union, BATCH_ROWS, &mut |batch| {
        let mut listening = false;
        for (c, pick) in consumers.iter().zip(&picks) {
            if c.tx.is_closed() {
                continue;
            }
            let part = batch.project(pick).map_err(DataFusionError::from);
            listening |= c.tx.blocking_send(part).is_ok();
        }
        listening
    });
    if let Err(e) = result {
        let reason = e.to_string();
        error
            .lock()
            .expect("a reader thread panicked")
            .get_or_insert(e);
        for c in &consumers {
            let _ =
                c.tx.blocking_send(Err(DataFusionError::Execution(reason.clone())));
        }
    }
}

impl Pump {
    /// Wait for the readers (every consumer has finished or been dropped) and return the
    /// first error one met.
    pub fn finish(self) -> Result<()> {
        for t in self.threads {
            t.join()
                .map_err(|_| Error::Internal("an nsys reader thread panicked".into()))?;
        }
        let error = self.error.lock().expect("a reader thread panicked").take();
        error.map_or(Ok(()), Err)
    }
}

/// The scan of a [`FeedTable`]: one partition, the batches of its channel, in rowid order.
struct FeedExec {
    table: &'static str,
    rows: usize,
    rx: Mutex<Option<mpsc::Receiver<Item>>>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for FeedExec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "NsysFeedExec({})", self.table)
    }
}

impl FeedExec {
    fn new(table: &'static str, schema: SchemaRef, rows: usize, rx: mpsc::Receiver<Item>) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        FeedExec {
            table,
            rows,
            rx: Mutex::new(Some(rx)),
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for FeedExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "NsysFeedExec: table={} rows~{}", self.table, self.rows)
    }
}

impl ExecutionPlan for FeedExec {
    fn name(&self) -> &str {
        "NsysFeedExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
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
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "NsysFeedExec has no inputs".into(),
            ))
        }
    }

    /// The row estimate (the table's rowid span) lets the join planner put the small side
    /// (StringIds, the session row) on the build side and stream this one.
    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        let schema = self.schema();
        let columns = schema.fields().len().max(1);
        Ok(Arc::new(Statistics {
            num_rows: Precision::Inexact(self.rows),
            total_byte_size: Precision::Inexact(self.rows.saturating_mul(8 * columns)),
            column_statistics: Statistics::unknown_column(&schema),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let rx = self
            .rx
            .lock()
            .expect("an executor thread panicked")
            .take()
            .filter(|_| partition == 0)
            .ok_or_else(|| {
                DataFusionError::Internal(format!("{}: a feed scan runs once", self.table))
            })?;
        let batches = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::nsys::load;
    use datafusion::arrow::array::Int64Array;
    use datafusion::prelude::SessionContext;

    /// A report with `n` runtime calls, start = rowid * 10.
    fn report(dir: &std::path::Path, n: i64) -> std::path::PathBuf {
        let path = dir.join("r.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, \"end\" INTEGER,
               deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
               globalPid INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER,
               blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER,
               staticSharedMemory INTEGER, dynamicSharedMemory INTEGER);
             INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, globalPid) VALUES (1, 1);
             CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, \"end\" INTEGER,
               globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
             WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {n})
             INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT i * 10, i * 10 + 5, 7, i, 1 FROM c;"
        ))
        .unwrap();
        path
    }

    #[tokio::test]
    async fn one_read_feeds_every_scan_of_a_table_in_rowid_order_in_its_columns() {
        let dir = tempfile::tempdir().unwrap();
        let n = 2 * BATCH_ROWS as i64 + 5;
        let report = load::load(&report(dir.path(), n)).unwrap();
        let runtime = report.streamed["CUPTI_ACTIVITY_KIND_RUNTIME"].clone();
        assert_eq!(runtime.rows(), n as usize);
        // no eventClass in this schema: an optional column, read as NULL
        let ctx = SessionContext::new();
        let feed = Arc::new(FeedTable::new(runtime));
        ctx.register_table("rt", feed.clone()).unwrap();
        let a = ctx
            .sql("SELECT start, \"eventClass\" FROM rt")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let b = ctx
            .sql("SELECT \"end\" FROM rt")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let pump = pump(std::slice::from_ref(&feed));
        let (ra, rb) = futures::join!(
            datafusion::physical_plan::collect(a, ctx.task_ctx()),
            datafusion::physical_plan::collect(b, ctx.task_ctx())
        );
        pump.finish().unwrap();
        let values = |batches: &[RecordBatch], col: usize| -> Vec<Option<i64>> {
            batches
                .iter()
                .flat_map(|b| {
                    let a = b.column(col).as_any().downcast_ref::<Int64Array>().unwrap();
                    a.iter().collect::<Vec<_>>()
                })
                .collect()
        };
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert!(ra.len() >= 3, "read in batches: {}", ra.len());
        let starts: Vec<Option<i64>> = (1..=n).map(|i| Some(i * 10)).collect();
        let ends: Vec<Option<i64>> = (1..=n).map(|i| Some(i * 10 + 5)).collect();
        assert_eq!(values(&ra, 0), starts);
        assert!(values(&ra, 1).iter().all(Option::is_none));
        assert_eq!(values(&rb, 0), ends);
    }

    #[tokio::test]
    async fn a_read_error_reaches_the_scan_and_the_pump() {
        let dir = tempfile::tempdir().unwrap();
        let path = report(dir.path(), 10);
        let report = load::load(&path).unwrap();
        let runtime = report.streamed["CUPTI_ACTIVITY_KIND_RUNTIME"].clone();
        std::fs::write(&path, b"not a database any more").unwrap();
        let ctx = SessionContext::new();
        let feed = Arc::new(FeedTable::new(runtime));
        ctx.register_table("rt", feed.clone()).unwrap();
        let plan = ctx
            .sql("SELECT start FROM rt")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let pump = pump(std::slice::from_ref(&feed));
        let result = datafusion::physical_plan::collect(plan, ctx.task_ctx()).await;
        assert!(result.is_err());
        let error = pump.finish().unwrap_err().to_string();
        assert!(error.contains("CUPTI_ACTIVITY_KIND_RUNTIME"), "{error}");
        assert!(!error.contains('\n'), "{error}");
    }
}
