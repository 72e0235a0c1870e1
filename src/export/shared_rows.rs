//! Row sets an export holds in memory, as tables:
//! - views computed once per export: the row sets several export plans read
//!   (`_chrome_api_row`, `_chrome_gpu_row`, ...) are joins, window functions and ordered
//!   aggregates over whole tables; each plan that reads them would otherwise run them again;
//! - rows freed once their last reader has run: `cpu_event` (the CPU trace parsed, hundreds
//!   of MB on a large window) is read only by `chrome_cpu_event` and `_chrome_cpu_thread`,
//!   both done before the bulk of the export; each shared view once the last plan that
//!   reads it is done and the last shared view computed from it is held ([`Readers`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::{MemTable, TableType, ViewTable};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, LogicalPlan, SortExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionContext};
use tokio::sync::Mutex;

use crate::Result;

/// Where a held table's rows are.
#[derive(Debug)]
enum Rows {
    /// Not computed yet: the query, run on the first scan.
    Query(DataFrame),
    /// Given by the export once it knows them; none before.
    Later,
    Held(Arc<MemTable>),
    /// Freed after their last reader; a later scan is an error, never an empty table.
    Released,
}

/// A table of rows held in memory: computed from a query on first scan, or given; freed on
/// [`release`].
#[derive(Debug)]
pub(crate) struct HeldRows {
    name: String,
    schema: SchemaRef,
    rows: Mutex<Rows>,
    /// the orders the computed rows are in (the query sorts by the first; the others are
    /// equal orders), told to the planner so that it sorts nothing again
    sorted: Vec<Vec<SortExpr>>,
    /// told when the rows are computed, so that the shared views they were computed from
    /// can be freed
    readers: OnceLock<Weak<Readers>>,
}

impl HeldRows {
    /// The rows of `table`, held until released.
    pub fn new(name: &str, table: MemTable) -> Self {
        HeldRows {
            name: name.to_string(),
            schema: table.schema(),
            rows: Mutex::new(Rows::Held(Arc::new(table))),
            sorted: Vec::new(),
            readers: OnceLock::new(),
        }
    }

    /// The rows of `query`, computed on first scan (sorted by the first of `sorted`) and held.
    pub fn computed(name: &str, query: DataFrame, sorted: Vec<Vec<SortExpr>>) -> Result<Self> {
        let query = match sorted.first() {
            Some(order) => query.sort(order.clone())?,
            None => query,
        };
        Ok(HeldRows {
            name: name.to_string(),
            schema: Arc::new(query.schema().as_arrow().clone()),
            rows: Mutex::new(Rows::Query(query)),
            sorted,
            readers: OnceLock::new(),
        })
    }

    /// Rows of `schema` that the export gives once it knows them ([`HeldRows::give`]); no
    /// rows until then.
    pub fn later(name: &str, schema: SchemaRef) -> Self {
        HeldRows {
            name: name.to_string(),
            schema,
            rows: Mutex::new(Rows::Later),
            sorted: Vec::new(),
            readers: OnceLock::new(),
        }
    }

    /// Give the rows of a [`HeldRows::later`] table (once).
    pub async fn give(&self, batches: Vec<RecordBatch>) -> Result<()> {
        let mut rows = self.rows.lock().await;
        assert!(
            matches!(*rows, Rows::Later),
            "{}: its rows are given once",
            self.name
        );
        *rows = Rows::Held(Arc::new(MemTable::try_new(
            self.schema.clone(),
            vec![batches],
        )?));
        Ok(())
    }

    async fn rows(&self) -> DfResult<Arc<MemTable>> {
        let mut rows = self.rows.lock().await;
        if let Rows::Query(query) = &*rows {
            let started = crate::profile::Clock::start();
            crate::profile::explain(&self.name, async || Ok(query.clone()))
                .await
                .map_err(|e| DataFusionError::External(e.into()))?;
            let partitions = query.clone().collect_partitioned().await?;
            started.report(&format!("  (shared rows {})", self.name));
            let table = MemTable::try_new(self.schema.clone(), partitions)?;
            *rows = Rows::Held(Arc::new(table.with_sort_order(self.sorted.clone())));
            if let Some(readers) = self.readers.get().and_then(Weak::upgrade) {
                readers
                    .computed(&self.name)
                    .await
                    .map_err(|e| DataFusionError::External(e.into()))?;
            }
        }
        match &*rows {
            Rows::Held(table) => Ok(table.clone()),
            Rows::Later => Ok(Arc::new(MemTable::try_new(
                self.schema.clone(),
                vec![vec![]],
            )?)),
            _ => Err(DataFusionError::Execution(format!(
                "{}: read after the export released it",
                self.name
            ))),
        }
    }
}

#[async_trait]
impl TableProvider for HeldRows {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.rows()
            .await?
            .scan(state, projection, filters, limit)
            .await
    }
}

/// Free `name`'s rows, when it is a held table; a later scan is an error.
async fn release(ctx: &SessionContext, name: &str) -> Result<()> {
    let table = ctx.table_provider(name).await?;
    if let Some(held) = (table.as_ref() as &dyn std::any::Any).downcast_ref::<HeldRows>() {
        *held.rows.lock().await = Rows::Released;
    }
    crate::memory::return_free_memory();
    Ok(())
}

/// The shared views and who reads them: the export plans, and the shared views whose
/// computation reads other shared views. A view's rows are freed once all its readers are
/// done: a plan when it has run; a shared view as soon as its own rows are computed (so
/// `_chrome_gpu_row` goes once `_chrome_graph_node`, computed from it, is held, not when
/// the plan that reads `_chrome_graph_node` ends). The reads are the table scans of the
/// logical plans, followed through plain views and subqueries.
pub(crate) struct Readers {
    /// each plan's shared views, read directly or through plain views
    reads: HashMap<&'static str, Vec<String>>,
    /// each shared view's own shared reads
    inputs: HashMap<String, Vec<String>>,
    tables: HashMap<String, Arc<HeldRows>>,
    /// readers not done yet, per shared view
    left: std::sync::Mutex<HashMap<String, usize>>,
}

impl Readers {
    /// Readers among `plans`, the plans the export is about to run (each exactly once).
    pub async fn new(ctx: &SessionContext, plans: &[&'static str]) -> Result<Arc<Readers>> {
        let mut reads = HashMap::new();
        let mut inputs = HashMap::new();
        let mut tables = HashMap::new();
        let mut todo = Vec::new();
        for plan in plans {
            let shared = shared_reads(ctx, ctx.table(*plan).await?.into_unoptimized_plan()).await?;
            todo.extend(shared.iter().cloned());
            reads.insert(
                *plan,
                shared.into_iter().map(|(name, _)| name).collect::<Vec<_>>(),
            );
        }
        while let Some((name, held)) = todo.pop() {
            if tables.contains_key(&name) {
                continue;
            }
            let query = match &*held.rows.lock().await {
                Rows::Query(query) => query.logical_plan().clone(),
                _ => continue,
            };
            let shared = shared_reads(ctx, query).await?;
            todo.extend(shared.iter().cloned());
            inputs.insert(name.clone(), shared.into_iter().map(|(n, _)| n).collect());
            tables.insert(name, held);
        }
        let mut left: HashMap<String, usize> = HashMap::new();
        for name in reads.values().chain(inputs.values()).flatten() {
            *left.entry(name.clone()).or_default() += 1;
        }
        let readers = Arc::new(Readers {
            reads,
            inputs,
            tables,
            left: std::sync::Mutex::new(left),
        });
        for held in readers.tables.values() {
            let _ = held.readers.set(Arc::downgrade(&readers));
        }
        Ok(readers)
    }

    /// `plan` is done: free the shared views it was the last reader of. (A shared view
    /// counts as a reader of its inputs until its rows are computed, even if the plans that
    /// read it are done: another plan may still compute it.)
    pub async fn done(&self, plan: &str) -> Result<()> {
        self.read_done(self.reads.get(plan)).await
    }

    /// The rows of the shared view `name` are computed (once: its table computes them
    /// under its lock): free its inputs it was the last reader of.
    async fn computed(&self, name: &str) -> Result<()> {
        self.read_done(self.inputs.get(name)).await
    }

    /// One reader of each of `names` is done: free those it was the last reader of.
    async fn read_done(&self, names: Option<&Vec<String>>) -> Result<()> {
        let mut freed = Vec::new();
        {
            let mut left = self
                .left
                .lock()
                .expect("no reader panics holding the counts");
            for name in names.into_iter().flatten() {
                let count = left.get_mut(name).expect("every read view is counted");
                *count -= 1;
                if *count == 0 {
                    freed.push(name.clone());
                }
            }
        }
        self.release(freed).await
    }

    async fn release(&self, names: Vec<String>) -> Result<()> {
        if names.is_empty() {
            return Ok(());
        }
        for name in names {
            if let Some(held) = self.tables.get(&name) {
                *held.rows.lock().await = Rows::Released;
            }
        }
        crate::memory::return_free_memory();
        Ok(())
    }
}

/// The held views (not computed yet) that the plan `name` reads, directly or through plain
/// views.
pub(crate) async fn held_reads(ctx: &SessionContext, name: &str) -> Result<Vec<String>> {
    let plan = ctx.table(name).await?.into_unoptimized_plan();
    let reads = shared_reads(ctx, plan).await?;
    Ok(reads.into_iter().map(|(name, _)| name).collect())
}

/// The shared views (held tables not yet computed) that `plan` reads, directly or through
/// plain views, with their tables.
async fn shared_reads(
    ctx: &SessionContext,
    plan: LogicalPlan,
) -> Result<Vec<(String, Arc<HeldRows>)>> {
    let mut found = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut todo = vec![plan];
    while let Some(plan) = todo.pop() {
        for name in scanned_tables(&plan)? {
            if seen.contains(&name) {
                continue;
            }
            seen.push(name.clone());
            let table = ctx.table_provider(name.as_str()).await?;
            let any = table.clone() as Arc<dyn std::any::Any + Send + Sync>;
            if let Some(view) = any.downcast_ref::<ViewTable>() {
                todo.push(view.logical_plan().clone());
            } else if let Ok(held) = any.downcast::<HeldRows>() {
                if matches!(&*held.rows.lock().await, Rows::Query(_)) {
                    found.push((name, held));
                }
            }
        }
    }
    Ok(found)
}

/// The tables `plan` scans, subqueries included.
fn scanned_tables(plan: &LogicalPlan) -> Result<Vec<String>> {
    let mut names = Vec::new();
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            names.push(scan.table_name.table().to_string());
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(names)
}

/// Compute the shared view `keep` now, then free the rows of the held table `release`, which
/// only `keep` still needed.
pub(crate) async fn keep_then_release(
    ctx: &SessionContext,
    keep: &str,
    release: &str,
) -> Result<()> {
    ctx.table(keep).await?.count().await?;
    self::release(ctx, release).await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(ctx: &SessionContext, sql: &str) -> DfResult<usize> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(batches.iter().map(|b| b.num_rows()).sum())
    }

    #[tokio::test]
    async fn a_shared_view_is_freed_after_its_last_reader_plan_or_shared_view() {
        let ctx = SessionContext::new();
        // rows_a and rows_b are shared, rows_b reads rows_a; plan_p reads rows_a only in a
        // subquery of a view; plan_q reads rows_b
        let setup = [
            ("CREATE TABLE base AS VALUES (1), (2), (3)", None),
            (
                "CREATE VIEW rows_a AS SELECT column1 AS x FROM base",
                Some("rows_a"),
            ),
            (
                "CREATE VIEW rows_b AS SELECT x FROM rows_a WHERE x > 1",
                Some("rows_b"),
            ),
            (
                "CREATE VIEW inner_view AS SELECT * FROM base \
                 WHERE column1 IN (SELECT x FROM rows_a)",
                None,
            ),
            ("CREATE VIEW plan_p AS SELECT * FROM inner_view", None),
            ("CREATE VIEW plan_q AS SELECT * FROM rows_b", None),
        ];
        for (sql, shared) in setup {
            run(&ctx, sql).await.unwrap();
            if let Some(name) = shared {
                // a held view, registered as the export registers them: a held table
                let query = ctx.table(name).await.unwrap();
                ctx.deregister_table(name).unwrap();
                let held = HeldRows::computed(name, query, Vec::new()).unwrap();
                ctx.register_table(name, Arc::new(held)).unwrap();
            }
        }

        let readers = Readers::new(&ctx, &["plan_p", "plan_q"]).await.unwrap();
        assert_eq!(readers.reads["plan_p"], vec!["rows_a".to_string()]);
        assert_eq!(readers.reads["plan_q"], vec!["rows_b".to_string()]);
        assert_eq!(readers.inputs["rows_b"], vec!["rows_a".to_string()]);

        assert_eq!(run(&ctx, "SELECT * FROM plan_p").await.unwrap(), 3);
        readers.done("plan_p").await.unwrap();
        // rows_b, not computed yet, still reads rows_a: nothing is freed yet
        assert_eq!(run(&ctx, "SELECT * FROM rows_a").await.unwrap(), 3);
        // plan_q computes rows_b, its last reader: rows_a goes before plan_q is done
        assert_eq!(run(&ctx, "SELECT * FROM plan_q").await.unwrap(), 2);
        let error = run(&ctx, "SELECT * FROM rows_a").await.unwrap_err();
        assert!(error.to_string().contains("released"), "{error}");
        assert_eq!(run(&ctx, "SELECT * FROM rows_b").await.unwrap(), 2);
        readers.done("plan_q").await.unwrap();
        for name in ["rows_a", "rows_b"] {
            let error = run(&ctx, &format!("SELECT * FROM {name}"))
                .await
                .unwrap_err();
            assert!(error.to_string().contains("released"), "{name}: {error}");
        }
    }
}
