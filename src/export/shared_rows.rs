//! A view computed once per export: the row sets several export plans read
//! (`_chrome_api_row`, `_chrome_gpu_row`, ...) are joins, window functions and ordered
//! aggregates over whole tables; each plan that reads them would otherwise run them again.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionContext};
use tokio::sync::OnceCell;

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

/// A table holding the rows of a query, run on the first scan and kept for the next ones.
#[derive(Debug)]
struct SharedRows {
    query: DataFrame,
    rows: OnceCell<Arc<MemTable>>,
}

impl SharedRows {
    async fn rows(&self) -> DfResult<Arc<MemTable>> {
        let table = self
            .rows
            .get_or_try_init(|| async {
                let started = std::time::Instant::now();
                let schema = self.query.schema().as_arrow().clone();
                let partitions = self.query.clone().collect_partitioned().await?;
                if std::env::var_os("TRACESQL_PROFILE").is_some() {
                    eprintln!("  (shared rows: {:.3} s)", started.elapsed().as_secs_f64());
                }
                MemTable::try_new(Arc::new(schema), partitions).map(Arc::new)
            })
            .await?;
        Ok(table.clone())
    }
}

#[async_trait]
impl TableProvider for SharedRows {
    fn schema(&self) -> SchemaRef {
        Arc::new(self.query.schema().as_arrow().clone())
    }

    fn table_type(&self) -> TableType {
        TableType::View
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
        Arc::new(SharedRows {
            query,
            rows: OnceCell::new(),
        }),
    )?;
    Ok(())
}

/// A table whose rows the export frees once the plans that read them have run: `cpu_event`
/// (the CPU trace parsed: hundreds of MB on a large window) is read only by
/// `chrome_cpu_event` and `_chrome_cpu_thread`, both done before the bulk of the export.
#[derive(Debug)]
pub(crate) struct ReleasableRows {
    name: &'static str,
    schema: SchemaRef,
    rows: std::sync::Mutex<Option<Arc<MemTable>>>,
}

impl ReleasableRows {
    pub fn new(name: &'static str, rows: MemTable) -> Self {
        ReleasableRows {
            name,
            schema: rows.schema(),
            rows: std::sync::Mutex::new(Some(Arc::new(rows))),
        }
    }
}

#[async_trait]
impl TableProvider for ReleasableRows {
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
        let rows = self.rows.lock().expect("not poisoned").clone();
        let rows = rows.ok_or_else(|| {
            DataFusionError::Execution(format!("{}: read after the export released it", self.name))
        })?;
        rows.scan(state, projection, filters, limit).await
    }
}

/// Keep the rows of the shared view `keep` (computing them now), then free those of the
/// [`ReleasableRows`] table `release`, which only `keep` still needed.
pub(crate) async fn keep_then_release(
    ctx: &SessionContext,
    keep: &str,
    release: &str,
) -> Result<()> {
    ctx.table(keep).await?.count().await?;
    let table = ctx.table_provider(release).await?;
    if let Some(table) = (table.as_ref() as &dyn std::any::Any).downcast_ref::<ReleasableRows>() {
        table.rows.lock().expect("not poisoned").take();
    }
    Ok(())
}
