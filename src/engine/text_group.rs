//! Engine tuning: a faster first phase for `GROUP BY` one text column.
//!
//! DataFusion's partial aggregate hashes and compares every row's bytes when it groups by a
//! string; kernel names average ~200 bytes, so `group by name` over 8 M kernels spent most of
//! its time there. Window text columns are dictionary-encoded in Parquet, and Arrow's reader
//! turns a dictionary page into string views that all point at the one copy of each value:
//! within a batch, an equal 16-byte view is an equal string. [`TextGroupPartialExec`] looks
//! each row's view up in a per-batch map and hashes the bytes only for a view it has not seen
//! in that batch.
//!
//! In: an `AggregateExec` in `Partial` mode grouping by one `Utf8View` expression with plain
//! aggregates ([`TextGroupRule`] decides). Out: the same partial rows (the group value, then
//! each aggregate's state columns), which the unchanged final aggregate merges.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayBuilder, ArrayRef, AsArray, RecordBatch, StringViewArray, StringViewBuilder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::HashMap;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::{stream, StreamExt, TryStreamExt};

/// Replaces each partial aggregate that groups by one text column with [`TextGroupPartialExec`].
#[derive(Debug, Default)]
pub struct TextGroupRule;

impl PhysicalOptimizerRule for TextGroupRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(agg) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            if !groups_by_one_text_column(agg) {
                return Ok(Transformed::no(node));
            }
            let exec = TextGroupPartialExec::new(Arc::new(agg.clone()));
            Ok(Transformed::yes(Arc::new(exec) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "text_group_partial_aggregate"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether `agg` is a partial aggregate this module computes the same way: one `Utf8View`
/// group expression, no grouping sets, and aggregates that are neither filtered, ordered nor
/// distinct and have a groups accumulator.
fn groups_by_one_text_column(agg: &AggregateExec) -> bool {
    let group_by = agg.group_expr();
    let [(key, _)] = group_by.expr() else {
        return false;
    };
    *agg.mode() == AggregateMode::Partial
        && !group_by.has_grouping_set()
        && matches!(key.data_type(&agg.input_schema()), Ok(DataType::Utf8View))
        && agg.filter_expr().iter().all(Option::is_none)
        && agg.aggr_expr().iter().all(|a| {
            a.order_bys().is_empty() && !a.is_distinct() && a.groups_accumulator_supported()
        })
        && agg.limit_options().is_none()
        && agg.dynamic_expressions_produced().is_empty()
        && *agg.input_order_mode() == InputOrderMode::Linear
}

/// The partial aggregate of one `AggregateExec`, grouped through string views.
#[derive(Debug)]
pub struct TextGroupPartialExec {
    /// The aggregate replaced: its input, expressions, schema and properties.
    agg: Arc<AggregateExec>,
    metrics: ExecutionPlanMetricsSet,
}

impl TextGroupPartialExec {
    fn new(agg: Arc<AggregateExec>) -> Self {
        TextGroupPartialExec {
            agg,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for TextGroupPartialExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let (key, name) = &self.agg.group_expr().expr()[0];
        let aggregates: Vec<&str> = self.agg.aggr_expr().iter().map(|a| a.name()).collect();
        write!(
            f,
            "TextGroupPartialExec: gby=[{key} as {name}], aggr=[{}]",
            aggregates.join(", ")
        )
    }
}

impl ExecutionPlan for TextGroupPartialExec {
    fn name(&self) -> &str {
        "TextGroupPartialExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.agg.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![self.agg.input()]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.agg.apply_expressions(f)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let agg = Arc::clone(&self.agg).replace_children(children, options)?;
        let agg = agg
            .downcast_ref::<AggregateExec>()
            .expect("an AggregateExec with new children is an AggregateExec")
            .clone();
        Ok(Arc::new(TextGroupPartialExec::new(Arc::new(agg))))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let mut input = self.agg.input().execute(partition, Arc::clone(&context))?;
        let mut table = GroupTable::try_new(&self.agg)?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let schema = self.schema();
        let batch_size = context.session_config().batch_size().max(1);
        let groups = stream::once(async move {
            while let Some(batch) = input.next().await {
                let batch = batch?;
                let _timer = baseline.elapsed_compute().timer();
                table.update(&batch)?;
            }
            let _timer = baseline.elapsed_compute().timer();
            let out = table.emit(schema)?;
            baseline.record_output(out.num_rows());
            Ok::<_, DataFusionError>(out)
        });
        // One batch of all groups, handed on in batch-size slices.
        let slices =
            groups
                .map_ok(move |all| {
                    let starts = (0..all.num_rows()).step_by(batch_size);
                    stream::iter(starts.map(move |start| {
                        Ok(all.slice(start, batch_size.min(all.num_rows() - start)))
                    }))
                })
                .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            slices,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// One partition's groups and their accumulators.
struct GroupTable {
    key: Arc<dyn PhysicalExpr>,
    /// Each aggregate's argument expressions, in aggregate order.
    args: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    groups: TextGroups,
    /// The group of each row of the current batch.
    group_of_row: Vec<usize>,
}

impl GroupTable {
    fn try_new(agg: &AggregateExec) -> Result<Self> {
        Ok(GroupTable {
            key: Arc::clone(&agg.group_expr().expr()[0].0),
            args: agg.aggr_expr().iter().map(|a| a.expressions()).collect(),
            accumulators: agg
                .aggr_expr()
                .iter()
                .map(|a| a.create_groups_accumulator())
                .collect::<Result<_>>()?,
            groups: TextGroups::default(),
            group_of_row: Vec::new(),
        })
    }

    fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        let rows = batch.num_rows();
        let key = self.key.evaluate(batch)?.into_array(rows)?;
        self.groups
            .assign(key.as_string_view(), &mut self.group_of_row);
        for (acc, args) in self.accumulators.iter_mut().zip(&self.args) {
            let values = args
                .iter()
                .map(|e| e.evaluate(batch)?.into_array(rows))
                .collect::<Result<Vec<ArrayRef>>>()?;
            acc.update_batch(&values, &self.group_of_row, None, self.groups.len())?;
        }
        Ok(())
    }

    /// Every group: its text, then each aggregate's state columns, as the partial
    /// `AggregateExec` lays them out.
    fn emit(&mut self, schema: SchemaRef) -> Result<RecordBatch> {
        let mut columns = vec![self.groups.finish()];
        for acc in &mut self.accumulators {
            columns.extend(acc.state(EmitTo::All)?);
        }
        Ok(RecordBatch::try_new(schema, columns)?)
    }
}

/// How many batches skip the view map after one in which most views differed.
const BATCHES_WITHOUT_VIEWS: usize = 16;

/// Group numbers for text values, in first-seen order.
#[derive(Default)]
struct TextGroups {
    by_text: HashMap<Box<str>, usize>,
    /// This batch's views already numbered: equal views in one array are equal strings.
    by_view: HashMap<u128, usize>,
    /// Batches left to group by bytes alone, after a batch whose views mostly differed.
    batches_without_views: usize,
    null_group: Option<usize>,
    /// Each group's value, in group order.
    values: StringViewBuilder,
}

impl TextGroups {
    fn len(&self) -> usize {
        self.values.len()
    }

    /// Writes the group of each row of `keys` into `out`, adding groups for new values.
    fn assign(&mut self, keys: &StringViewArray, out: &mut Vec<usize>) {
        out.clear();
        out.reserve(keys.len());
        if self.batches_without_views > 0 {
            // Plain-encoded text: views rarely repeat, so go straight to the bytes.
            self.batches_without_views -= 1;
            for row in 0..keys.len() {
                let group = match keys.is_valid(row) {
                    true => self.text_group(keys.value(row)),
                    false => self.null_group(),
                };
                out.push(group);
            }
            return;
        }
        self.by_view.clear();
        for (row, view) in keys.views().iter().enumerate() {
            let group = if keys.is_null(row) {
                self.null_group()
            } else if let Some(&group) = self.by_view.get(view) {
                group
            } else {
                let group = self.text_group(keys.value(row));
                self.by_view.insert(*view, group);
                group
            };
            out.push(group);
        }
        if self.by_view.len() * 2 > keys.len() {
            self.batches_without_views = BATCHES_WITHOUT_VIEWS;
        }
    }

    fn text_group(&mut self, text: &str) -> usize {
        if let Some(&group) = self.by_text.get(text) {
            return group;
        }
        let group = self.new_group(Some(text));
        self.by_text.insert(text.into(), group);
        group
    }

    fn null_group(&mut self) -> usize {
        match self.null_group {
            Some(group) => group,
            None => {
                let group = self.new_group(None);
                self.null_group = Some(group);
                group
            }
        }
    }

    fn new_group(&mut self, text: Option<&str>) -> usize {
        self.values.append_option(text);
        self.values.len() - 1
    }

    /// The groups' values, in group order.
    fn finish(&mut self) -> ArrayRef {
        Arc::new(self.values.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{Field, Schema};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    /// Batches of (k text, v int) with repeated, null and long keys; equal keys sit in
    /// separate buffers across batches.
    fn table() -> MemTable {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Utf8View, true),
            Field::new("v", DataType::Int64, true),
        ]));
        let names = [
            "short",
            "void a_rather_long_kernel_name<float>(float*)",
            "",
            "x",
        ];
        let batches = (0..7)
            .map(|b| {
                let keys: StringViewArray = (0..1000)
                    .map(|i| (i % 13 != b).then(|| names[(i * 7 + b) % names.len()]))
                    .collect();
                let values: Int64Array = (0..1000)
                    .map(|i| (i % 11 != 0).then_some((i * b) as i64))
                    .collect();
                RecordBatch::try_new(schema.clone(), vec![Arc::new(keys), Arc::new(values)])
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .expect("columns match the schema");
        // Two partitions, so DataFusion plans a partial and a final aggregate.
        let (first, second) = batches.split_at(3);
        MemTable::try_new(schema, vec![first.to_vec(), second.to_vec()]).expect("valid table")
    }

    async fn answer(ctx: &SessionContext, sql: &str) -> String {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    #[tokio::test]
    async fn grouped_answers_equal_datafusion_own() {
        let ours = crate::engine::query_session();
        let theirs = SessionContext::new();
        for ctx in [&ours, &theirs] {
            ctx.register_table("t", Arc::new(table())).unwrap();
        }
        let sql = "select k, count(*), count(v), sum(v), min(v), max(v), avg(v), max(k) \
                   from t group by k order by k nulls first";
        let plan = answer(&ours, &format!("explain {sql}")).await;
        assert!(plan.contains("TextGroupPartialExec"), "{plan}");
        let expected = answer(&theirs, sql).await;
        assert_eq!(answer(&ours, sql).await, expected);
        // Four keys and the null group, between the table's three border lines and header.
        assert_eq!(expected.lines().count(), 5 + 4, "{expected}");
        // A filtered aggregate is left to DataFusion, and still answers the same.
        let filtered = "select k, count(*) filter (where v > 10) from t group by k order by k";
        let plan = answer(&ours, &format!("explain {filtered}")).await;
        assert!(!plan.contains("TextGroupPartialExec"), "{plan}");
        assert_eq!(
            answer(&ours, filtered).await,
            answer(&theirs, filtered).await
        );
    }

    #[test]
    fn equal_text_is_one_group_whatever_its_view() {
        // The long name is written twice, so its two views differ: one group all the same.
        // Three distinct views in four rows make the second batch skip the view map.
        let long = "void kernel<float, 4>(float*)";
        let first = StringViewArray::from(vec![Some(long), Some("x"), None, Some(long)]);
        let second = StringViewArray::from(vec![Some("x"), Some(long), None]);
        let mut groups = TextGroups::default();
        let mut out = Vec::new();
        groups.assign(&first, &mut out);
        assert_eq!(out, vec![0, 1, 2, 0]);
        assert_eq!(groups.batches_without_views, BATCHES_WITHOUT_VIEWS);
        groups.assign(&second, &mut out);
        assert_eq!(out, vec![1, 0, 2]);
        let values = groups.finish();
        let values = values.as_string_view();
        assert_eq!(values.len(), 3);
        assert_eq!(values.value(0), long);
        assert_eq!(values.value(1), "x");
        assert!(values.is_null(2));
    }
}
