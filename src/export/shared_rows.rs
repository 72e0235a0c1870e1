//! A view computed once per export: the row sets several export plans read
//! (`_chrome_api_row`, `_chrome_gpu_row`, ...) are joins, window functions and ordered
//! aggregates over whole tables; each plan that reads them would otherwise run them again.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionContext};
use tokio::sync::OnceCell;

use crate::Result;

/// The views of `sql/export/` whose rows are kept once computed.
pub(crate) const SHARED: &[&str] = &[
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
