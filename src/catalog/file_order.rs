//! File order as a column: [`FileOrderTable`] gives a table one more column, `file_row`, each
//! row's place in the table's file (1, 2, ...), counted by the scan itself. The export's plans
//! number and order rows by it (the reference processes each table in file order) instead of
//! each numbering its rows with a `ROW_NUMBER() OVER ()` of its own.
//!
//! The scan reads the table's partitions one after another, so its one output partition is in
//! file order, and says so: an `ORDER BY file_row` over it sorts nothing. It takes no filter
//! (a row skipped below the count would shift every later number), so filters run above it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{ColumnStatistics, Statistics};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use futures::{stream, StreamExt, TryStreamExt};

use crate::schema::TABLES;
use crate::Result;

/// The column's name.
pub const FILE_ROW: &str = "file_row";

/// Give every window table registered in `ctx` its `file_row` column.
pub async fn number_window_tables(ctx: &SessionContext) -> Result<()> {
    for spec in TABLES {
        let inner = ctx.table_provider(spec.name).await?;
        ctx.deregister_table(spec.name)?;
        ctx.register_table(spec.name, Arc::new(FileOrderTable::new(inner)))?;
    }
    Ok(())
}

/// A table with its rows' places in the file as a last column, `file_row`.
#[derive(Debug)]
pub struct FileOrderTable {
    inner: Arc<dyn TableProvider>,
    schema: SchemaRef,
}

impl FileOrderTable {
    pub fn new(inner: Arc<dyn TableProvider>) -> Self {
        let mut fields: Vec<Field> = (inner.schema().fields().iter())
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new(FILE_ROW, DataType::Int64, false));
        let schema = Arc::new(Schema::new_with_metadata(
            fields,
            inner.schema().metadata().clone(),
        ));
        FileOrderTable { inner, schema }
    }
}

#[async_trait]
impl TableProvider for FileOrderTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn statistics(&self) -> Option<Statistics> {
        let mut stats = self.inner.statistics()?;
        stats
            .column_statistics
            .push(ColumnStatistics::new_unknown());
        Some(stats)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let counted = self.inner.schema().fields().len();
        let wanted: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..=counted).collect(),
        };
        let read: Vec<usize> = wanted.iter().copied().filter(|i| *i < counted).collect();
        // a limit keeps the first rows, so their numbers stay right
        let input = self.inner.scan(state, Some(&read), &[], limit).await?;
        let schema = Arc::new(self.schema.project(&wanted)?);
        let row_at = wanted.iter().position(|i| *i == counted);
        Ok(Arc::new(FileOrderExec::new(input, schema, row_at)))
    }
}

/// The scan of a [`FileOrderTable`]: its input's partitions in order, `file_row` inserted at
/// `row_at` (None: not asked for; the rows are still in file order).
#[derive(Debug)]
struct FileOrderExec {
    input: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    row_at: Option<usize>,
    properties: Arc<PlanProperties>,
}

impl FileOrderExec {
    fn new(input: Arc<dyn ExecutionPlan>, schema: SchemaRef, row_at: Option<usize>) -> Self {
        let ordering = row_at.map(|at| {
            let column = Arc::new(Column::new(FILE_ROW, at)) as Arc<dyn PhysicalExpr>;
            vec![PhysicalSortExpr::new(column, SortOptions::default())]
        });
        let properties = PlanProperties::new(
            EquivalenceProperties::new_with_orderings(schema.clone(), ordering),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        FileOrderExec {
            input,
            schema,
            row_at,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for FileOrderExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "FileOrderExec: {FILE_ROW}={}", self.row_at.is_some())
    }
}

impl ExecutionPlan for FileOrderExec {
    fn name(&self) -> &str {
        "FileOrderExec"
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

    // The input is read as it is: dealing its batches out, or merging its partitions in
    // any order, would lose the file order the count depends on.
    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::UnspecifiedDistribution]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    // The input's statistics, with unknown ones for `file_row`: the planner picks join sides
    // by row counts, as it would over the table itself.
    fn child_stats_requests(&self, _partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(None)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        let mut stats = input_stats[0].as_ref().clone();
        if let Some(at) = self.row_at {
            (stats.column_statistics).insert(at, ColumnStatistics::new_unknown());
        }
        Ok(Arc::new(stats))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = crate::engine::one_input(self.name(), children)?;
        Ok(Arc::new(FileOrderExec::new(
            input,
            self.schema.clone(),
            self.row_at,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "FileOrderExec has one partition, not {partition}"
            )));
        }
        let input = self.input.clone();
        let parts = input.properties().output_partitioning().partition_count();
        let batches = stream::iter(0..parts)
            .map(move |p| input.execute(p, context.clone()))
            .try_flatten();
        let (schema, row_at) = (self.schema.clone(), self.row_at);
        let mut next = 1i64;
        let numbered = batches.map(move |batch| {
            let batch = batch?;
            let rows = batch.num_rows() as i64;
            let first = next;
            next += rows;
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            if let Some(at) = row_at {
                columns.insert(
                    at,
                    Arc::new(Int64Array::from_iter_values(first..first + rows)),
                );
            }
            let options = datafusion::arrow::array::RecordBatchOptions::new()
                .with_row_count(Some(batch.num_rows()));
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                columns,
                &options,
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            numbered,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::datasource::MemTable;

    /// Rows 10, 20, ... 70 in three partitions of one or two batches.
    fn table() -> FileOrderTable {
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)]));
        let batch = |values: &[i64]| {
            RecordBatch::try_new(
                schema.clone(),
                vec![Arc::new(Int64Array::from(values.to_vec()))],
            )
            .unwrap()
        };
        let partitions = vec![
            vec![batch(&[10, 20]), batch(&[30])],
            vec![batch(&[40, 50])],
            vec![batch(&[60]), batch(&[70])],
        ];
        FileOrderTable::new(Arc::new(MemTable::try_new(schema, partitions).unwrap()))
    }

    async fn column(ctx: &SessionContext, sql: &str, name: &str) -> Vec<i64> {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        (batches.iter())
            .flat_map(|b| {
                let c = b.column_by_name(name).unwrap();
                c.as_primitive::<Int64Type>().values().to_vec()
            })
            .collect()
    }

    #[tokio::test]
    async fn rows_are_numbered_in_order_across_partitions_whatever_is_asked() {
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(table())).unwrap();
        let all = "SELECT file_row, x FROM t";
        assert_eq!(column(&ctx, all, "file_row").await, [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(column(&ctx, all, "x").await, [10, 20, 30, 40, 50, 60, 70]);
        // the column asked for first, or alone
        let first = "SELECT x, file_row FROM t";
        assert_eq!(column(&ctx, first, "file_row").await, [1, 2, 3, 4, 5, 6, 7]);
        // a filter runs above the count: the kept rows keep their places
        let kept = "SELECT file_row FROM t WHERE x % 20 = 0";
        assert_eq!(column(&ctx, kept, "file_row").await, [2, 4, 6]);
        // the scan is in file order, so ordering by it sorts nothing
        let sorted = "EXPLAIN SELECT x FROM t ORDER BY file_row";
        let plan = ctx.sql(sorted).await.unwrap().collect().await.unwrap();
        let text = datafusion::arrow::util::pretty::pretty_format_batches(&plan)
            .unwrap()
            .to_string();
        assert!(!text.contains("SortExec"), "{text}");
        let reversed = "SELECT file_row FROM t ORDER BY file_row DESC";
        assert_eq!(
            column(&ctx, reversed, "file_row").await,
            [7, 6, 5, 4, 3, 2, 1]
        );
    }
}
