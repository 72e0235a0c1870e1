//! A view computed on its first scan and held for the session's later scans: a report
//! helper that several queries of one `tracesql report` run read. DataFusion inlines a view
//! into every query that reads it, so each reader planned it and ran it again, and on a real
//! trace planning is most of a report's time: the five HTA reports of one command over HTA's
//! 15 k-op test trace took 148 ms with their helpers as views, 64 ms held (6c1b04d,
//! scripts/bench-reports.sh). Readers plan against its schema at once; the first scan computes
//! the rows while the others wait for them, so readers of different helpers plan and run side
//! by side.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::{collect, ExecutionPlan};
use tokio::sync::OnceCell;

/// A query's rows, computed once when first scanned. They stay in memory for the session.
#[derive(Debug)]
pub struct HeldView {
    /// what `--profile` calls it
    name: String,
    plan: LogicalPlan,
    schema: SchemaRef,
    rows: OnceCell<Vec<RecordBatch>>,
}

impl HeldView {
    /// The view `name` of `plan` (a query's logical plan, optimized or not).
    pub fn new(name: &str, plan: LogicalPlan) -> Self {
        HeldView {
            name: name.to_string(),
            schema: Arc::new(plan.schema().as_arrow().clone()),
            plan,
            rows: OnceCell::new(),
        }
    }
}

#[async_trait]
impl TableProvider for HeldView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
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
        let rows = self
            .rows
            .get_or_try_init(|| async {
                let clock = crate::profile::Clock::start();
                let plan = state.create_physical_plan(&self.plan).await?;
                let rows = collect(plan, state.task_ctx()).await;
                // its time (with any held view it reads), under the stage whose query read it
                // first
                clock.report(&format!("  (held {})", self.name));
                rows
            })
            .await?;
        let table = MemTable::try_new(self.schema.clone(), vec![rows.clone()])?;
        table.scan(state, projection, filters, limit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn readers_get_the_rows_of_one_run_of_the_query() {
        let ctx = SessionContext::new();
        // random() differs on every run: equal values say the rows were computed once
        let plan = ctx
            .sql("SELECT random() AS r")
            .await
            .unwrap()
            .into_unoptimized_plan();
        ctx.register_table("held", Arc::new(HeldView::new("held", plan)))
            .unwrap();
        let value = |sql: &'static str| {
            let ctx = ctx.clone();
            async move {
                let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
                let column = batches[0].column(0).clone();
                datafusion::arrow::util::display::array_value_to_string(&column, 0).unwrap()
            }
        };
        let (a, b) = tokio::join!(value("SELECT r FROM held"), value("SELECT r FROM held"));
        assert_eq!(a, b);
        assert_eq!(a, value("SELECT r * 1 AS r FROM held").await);
        let fresh = value("SELECT random() AS r").await;
        assert_ne!(a, fresh, "random() gave the same value twice");
    }
}
