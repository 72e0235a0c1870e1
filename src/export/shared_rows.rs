//! Row sets an export holds in memory, as tables:
//! - views computed once per export: the row sets several export plans read
//!   (`_chrome_api_row`, `_chrome_gpu_row`, ...) are joins, window functions and ordered
//!   aggregates over whole tables; each plan that reads them would otherwise run them again;
//! - rows freed once their last reader has run: `cpu_event` (the CPU trace parsed, hundreds
//!   of MB on a large window) is read only by `chrome_cpu_event` and `_chrome_cpu_thread`,
//!   both done before the bulk of the export.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionContext};
use tokio::sync::Mutex;

use crate::Result;

/// The views of `sql/export/` whose rows are kept once computed.
pub(crate) const SHARED: &[&str] = &[
    "_chrome_cpu_thread",
    "_chrome_gpu_row",
    "_chrome_api_row",
    "_chrome_sync_row",
    "_chrome_graph_node",
    "_chrome_graph_edge",
];

/// Where a held table's rows are.
#[derive(Debug)]
enum Rows {
    /// Not computed yet: the query, run on the first scan.
    Query(DataFrame),
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
}

impl HeldRows {
    /// The rows of `table`, held until released.
    pub fn new(name: &str, table: MemTable) -> Self {
        HeldRows {
            name: name.to_string(),
            schema: table.schema(),
            rows: Mutex::new(Rows::Held(Arc::new(table))),
        }
    }

    async fn rows(&self) -> DfResult<Arc<MemTable>> {
        let mut rows = self.rows.lock().await;
        if let Rows::Query(query) = &*rows {
            let started = crate::profile::Clock::start();
            let partitions = query.clone().collect_partitioned().await?;
            started.report(&format!("  (shared rows {})", self.name));
            *rows = Rows::Held(Arc::new(MemTable::try_new(
                self.schema.clone(),
                partitions,
            )?));
        }
        match &*rows {
            Rows::Held(table) => Ok(table.clone()),
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

/// Replace the view `name` with a table that computes its rows once, on first use.
pub(crate) async fn share(ctx: &SessionContext, name: &str) -> Result<()> {
    let query = ctx.table(name).await?;
    ctx.deregister_table(name)?;
    ctx.register_table(
        name,
        Arc::new(HeldRows {
            name: name.to_string(),
            schema: Arc::new(query.schema().as_arrow().clone()),
            rows: Mutex::new(Rows::Query(query)),
        }),
    )?;
    Ok(())
}

/// Compute the shared view `keep` now, then free the rows of the held table `release`, which
/// only `keep` still needed.
pub(crate) async fn keep_then_release(
    ctx: &SessionContext,
    keep: &str,
    release: &str,
) -> Result<()> {
    ctx.table(keep).await?.count().await?;
    let table = ctx.table_provider(release).await?;
    if let Some(held) = (table.as_ref() as &dyn std::any::Any).downcast_ref::<HeldRows>() {
        *held.rows.lock().await = Rows::Released;
    }
    Ok(())
}
