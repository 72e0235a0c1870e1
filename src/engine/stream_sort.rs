//! Engine: the sort [`super::stream_order`] puts where rows come in time order per stream:
//! each partition's rows dealt out to their streams in one pass, keeping their order, each
//! stream checked and sorted only when it is out of order.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{
    concat_batches, take_record_batch, LexicographicalComparator, SortColumn,
};
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    apply_expression_roots, DisplayAs, DisplayFormatType, Distribution, ExecutionPlan,
    ExecutionPlanProperties, Partitioning, PlanProperties, SendableRecordBatchStream,
};
use futures::{stream, TryStreamExt};

/// Sorts each partition by `order` whose first `group_len` keys name the groups: one pass
/// deals the rows out to their groups (in key order), keeping their order, then each group
/// is checked and, only when out of order, sorted.
#[derive(Debug)]
pub struct StreamSortExec {
    input: Arc<dyn ExecutionPlan>,
    order: LexOrdering,
    group_len: usize,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl StreamSortExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, order: LexOrdering, group_len: usize) -> Self {
        let partitions = input.output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new_with_orderings(input.schema(), [order.clone()]),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        StreamSortExec {
            input,
            order,
            group_len,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for StreamSortExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "StreamSortExec: groups={}, expr=[{}]",
            self.group_len, self.order
        )
    }
}

impl ExecutionPlan for StreamSortExec {
    fn name(&self) -> &str {
        "StreamSortExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        apply_expression_roots(self.order.iter().map(|e| &e.expr), f)
    }

    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::UnspecifiedDistribution]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = crate::engine::one_input(self.name(), children)?;
        Ok(Arc::new(StreamSortExec::new(
            input,
            self.order.clone(),
            self.group_len,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context.clone())?;
        let schema = self.schema();
        let (order, group_len) = (self.order.clone(), self.group_len);
        let batch_size = context.session_config().batch_size();
        let metrics = BaselineMetrics::new(&self.metrics, partition);
        let sorted = stream::once({
            let schema = schema.clone();
            async move {
                let batches: Vec<RecordBatch> = input.try_collect().await?;
                let timer = metrics.elapsed_compute().timer();
                let rows = stream_sorted(&schema, &batches, &order, group_len)?;
                drop(batches);
                let parts = chunks(rows, batch_size)?;
                timer.done();
                metrics.record_output(parts.iter().map(RecordBatch::num_rows).sum());
                Ok::<_, DataFusionError>(stream::iter(parts.into_iter().map(Ok)))
            }
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, sorted)))
    }
}

/// The rows of `batches` sorted by `order`, and the permutation that does it.
struct Sorted {
    batch: RecordBatch,
    permutation: Vec<u32>,
}

fn chunks(sorted: Sorted, batch_size: usize) -> DfResult<Vec<RecordBatch>> {
    let n = sorted.permutation.len();
    let batch_size = batch_size.max(1);
    // Rows already in order (a file in the claimed order): slices of the batch, no copy.
    if (sorted.permutation.iter().enumerate()).all(|(i, row)| i == *row as usize) {
        return Ok((0..n)
            .step_by(batch_size)
            .map(|at| sorted.batch.slice(at, batch_size.min(n - at)))
            .collect());
    }
    (sorted.permutation.chunks(batch_size))
        .map(|part| {
            Ok(take_record_batch(
                &sorted.batch,
                &UInt32Array::from(part.to_vec()),
            )?)
        })
        .collect()
}

fn stream_sorted(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    order: &LexOrdering,
    group_len: usize,
) -> DfResult<Sorted> {
    let batch = concat_batches(schema, batches)?;
    let n = batch.num_rows();
    if u32::try_from(n).is_err() {
        return Err(DataFusionError::Internal(format!(
            "StreamSortExec: {n} rows in one partition"
        )));
    }
    let columns: Vec<SortColumn> = order
        .iter()
        .map(|e| {
            Ok(SortColumn {
                values: e.expr.evaluate(&batch)?.into_array(n)?,
                options: Some(e.options),
            })
        })
        .collect::<DfResult<_>>()?;
    let (group_of, firsts) = group_ids(&columns[..group_len])?;

    // The groups in key order: their first rows compared by the group keys.
    let by_group = LexicographicalComparator::try_new(&columns[..group_len])?;
    let mut groups: Vec<u32> = (0..firsts.len() as u32).collect();
    groups.sort_by(|a, b| by_group.compare(firsts[*a as usize], firsts[*b as usize]));

    // Deal the rows out: each group's rows land in its range, in their order.
    let mut counts = vec![0usize; firsts.len()];
    for g in &group_of {
        counts[*g as usize] += 1;
    }
    let mut next = vec![0usize; firsts.len()];
    let mut at = 0;
    for g in &groups {
        next[*g as usize] = at;
        at += counts[*g as usize];
    }
    let ranges: Vec<(usize, usize)> = (groups.iter())
        .map(|g| (next[*g as usize], next[*g as usize] + counts[*g as usize]))
        .collect();
    let mut permutation = vec![0u32; n];
    for (row, g) in group_of.iter().enumerate() {
        let slot = &mut next[*g as usize];
        permutation[*slot] = row as u32;
        *slot += 1;
    }

    // Each group checked; one out of order is sorted (stably, so ties keep file order).
    // Within a group its keys are equal: only the keys after them order the rows.
    if group_len == columns.len() {
        return Ok(Sorted { batch, permutation });
    }
    let by_rest = LexicographicalComparator::try_new(&columns[group_len..])?;
    // The first of them a plain integer (the start time): compared directly, the rest of the
    // keys only on a tie.
    let first = &columns[group_len];
    let direct = (first.values.as_primitive_opt::<Int64Type>())
        .filter(|v| v.null_count() == 0)
        .map(|v| (v.values(), first.options.is_some_and(|o| o.descending)));
    let more_keys = columns.len() > group_len + 1;
    let cmp = |a: &u32, b: &u32| {
        if let Some((values, descending)) = direct {
            let (x, y) = (values[*a as usize], values[*b as usize]);
            let order = if descending { y.cmp(&x) } else { x.cmp(&y) };
            if order != Ordering::Equal || !more_keys {
                return order;
            }
        }
        by_rest.compare(*a as usize, *b as usize)
    };
    for (start, end) in ranges {
        let rows = &mut permutation[start..end];
        if rows
            .windows(2)
            .any(|w| cmp(&w[0], &w[1]) == Ordering::Greater)
        {
            rows.sort_by(cmp);
        }
    }
    Ok(Sorted { batch, permutation })
}

/// Each row's group number (numbered in order of first appearance) and each group's first row.
fn group_ids(keys: &[SortColumn]) -> DfResult<(Vec<u32>, Vec<usize>)> {
    let hasher = foldhash::fast::FixedState::with_seed(0);
    let n = keys.first().map_or(0, |k| k.values.len());
    let mut group_of = Vec::with_capacity(n);
    let mut firsts = Vec::new();
    // Non-null integer keys (device, stream): grouped by value, without a row encoding.
    let integers: Option<Vec<&[i64]>> = (keys.iter())
        .map(|k| {
            let values = k.values.as_primitive_opt::<Int64Type>()?;
            (values.null_count() == 0).then(|| values.values().as_ref())
        })
        .collect();
    if let Some(columns) = integers {
        let mut ids: HashMap<Vec<i64>, u32, _> = HashMap::with_hasher(hasher);
        let mut key = vec![0; columns.len()];
        for row in 0..n {
            // Rows of a group come in runs: the row before names the same one.
            if row > 0 && columns.iter().all(|c| c[row] == c[row - 1]) {
                group_of.push(group_of[row - 1]);
                continue;
            }
            for (k, c) in key.iter_mut().zip(&columns) {
                *k = c[row];
            }
            let id = match ids.get(key.as_slice()) {
                Some(id) => *id,
                None => {
                    let id = firsts.len() as u32;
                    firsts.push(row);
                    ids.insert(key.clone(), id);
                    id
                }
            };
            group_of.push(id);
        }
        return Ok((group_of, firsts));
    }
    let fields = keys
        .iter()
        .map(|k| SortField::new(k.values.data_type().clone()))
        .collect();
    let arrays: Vec<ArrayRef> = keys.iter().map(|k| k.values.clone()).collect();
    let rows = RowConverter::new(fields)?.convert_columns(&arrays)?;
    let mut ids: HashMap<&[u8], u32, _> = HashMap::with_hasher(hasher);
    let mut before: Option<&[u8]> = None;
    for (row, key) in rows.iter().enumerate() {
        let key_bytes = key.data();
        if before == Some(key_bytes) {
            group_of.push(group_of[row - 1]);
            continue;
        }
        before = Some(key_bytes);
        let next = firsts.len() as u32;
        let id = *ids.entry(key.data()).or_insert_with(|| {
            firsts.push(row);
            next
        });
        group_of.push(id);
    }
    Ok((group_of, firsts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::compute::SortOptions;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::Column;
    use datafusion::physical_expr::PhysicalSortExpr;

    fn batch(columns: &[(&str, Vec<Option<i64>>)]) -> RecordBatch {
        let schema = Schema::new(
            (columns.iter())
                .map(|(name, _)| Field::new(*name, DataType::Int64, true))
                .collect::<Vec<_>>(),
        );
        let arrays: Vec<ArrayRef> = (columns.iter())
            .map(|(_, v)| Arc::new(Int64Array::from(v.clone())) as ArrayRef)
            .collect();
        RecordBatch::try_new(Arc::new(schema), arrays).unwrap()
    }

    fn order(schema: &SchemaRef, keys: &[(&str, bool)]) -> LexOrdering {
        LexOrdering::new(keys.iter().map(|(name, descending)| {
            let column = Column::new_with_schema(name, schema).unwrap();
            let options = SortOptions {
                descending: *descending,
                nulls_first: false,
            };
            PhysicalSortExpr::new(Arc::new(column), options)
        }))
        .unwrap()
    }

    /// The rows as DataFusion's own sort orders them, by every column (ties broken).
    fn reference(b: &RecordBatch, order: &LexOrdering) -> Vec<Vec<Option<i64>>> {
        let columns: Vec<SortColumn> = order
            .iter()
            .map(|e| SortColumn {
                values: e
                    .expr
                    .evaluate(b)
                    .unwrap()
                    .into_array(b.num_rows())
                    .unwrap(),
                options: Some(e.options),
            })
            .collect();
        let indices = datafusion::arrow::compute::lexsort_to_indices(&columns, None).unwrap();
        rows(&take_record_batch(b, &indices).unwrap())
    }

    fn rows(b: &RecordBatch) -> Vec<Vec<Option<i64>>> {
        (0..b.num_rows())
            .map(|r| {
                (b.columns().iter())
                    .map(|c| {
                        let c = c.as_primitive::<Int64Type>();
                        c.is_valid(r).then(|| c.value(r))
                    })
                    .collect()
            })
            .collect()
    }

    fn sorted_rows(
        b: &RecordBatch,
        order: &LexOrdering,
        group_len: usize,
    ) -> Vec<Vec<Option<i64>>> {
        // split in two batches, as a scan would deliver them
        let half = b.num_rows() / 2;
        let parts = [b.slice(0, half), b.slice(half, b.num_rows() - half)];
        let sorted = stream_sorted(&b.schema(), &parts, order, group_len).unwrap();
        let out = chunks(sorted, 3).unwrap();
        rows(&concat_batches(&b.schema(), &out).unwrap())
    }

    #[test]
    fn rows_already_in_order_come_out_as_batch_size_slices_and_others_reordered() {
        let in_order = batch(&[
            (
                "stream_id",
                vec![Some(1), Some(1), Some(2), Some(2), Some(2)],
            ),
            (
                "start_ns",
                vec![Some(1), Some(2), Some(1), Some(3), Some(5)],
            ),
        ]);
        let o = order(
            &in_order.schema(),
            &[("stream_id", false), ("start_ns", false)],
        );
        for b in [in_order.clone(), in_order.slice(2, 3)] {
            let sorted = stream_sorted(&b.schema(), std::slice::from_ref(&b), &o, 1).unwrap();
            let parts = chunks(sorted, 2).unwrap();
            let sizes: Vec<usize> = parts.iter().map(RecordBatch::num_rows).collect();
            assert_eq!(sizes.iter().sum::<usize>(), b.num_rows());
            assert!(sizes.iter().all(|n| *n <= 2), "{sizes:?}");
            let back = concat_batches(&b.schema(), &parts).unwrap();
            assert_eq!(rows(&back), reference(&b, &o));
        }
        // Streams 2 then 1 in the input: the rows move, in chunks of 2.
        let swapped = concat_batches(
            &in_order.schema(),
            &[in_order.slice(2, 3), in_order.slice(0, 2)],
        )
        .unwrap();
        let sorted =
            stream_sorted(&swapped.schema(), std::slice::from_ref(&swapped), &o, 1).unwrap();
        let back = concat_batches(&swapped.schema(), &chunks(sorted, 2).unwrap()).unwrap();
        assert_eq!(rows(&back), reference(&swapped, &o));
        assert_eq!(rows(&back), rows(&in_order));
    }

    #[test]
    fn rows_in_time_order_per_stream_come_out_sorted_by_stream_then_time() {
        let b = batch(&[
            (
                "stream_id",
                vec![Some(7), Some(3), Some(7), Some(3), Some(9), Some(7)],
            ),
            (
                "start_ns",
                vec![Some(10), Some(5), Some(20), Some(6), Some(1), Some(30)],
            ),
        ]);
        let o = order(&b.schema(), &[("stream_id", false), ("start_ns", false)]);
        assert_eq!(sorted_rows(&b, &o, 1), reference(&b, &o));
    }

    #[test]
    fn a_stream_out_of_order_is_sorted_and_descending_groups_come_first_to_last() {
        // stream 3 goes back in time; the groups are asked for in descending order
        let b = batch(&[
            (
                "stream_id",
                vec![Some(3), Some(7), Some(3), None, Some(3), None],
            ),
            (
                "start_ns",
                vec![Some(50), Some(1), Some(10), Some(4), Some(30), Some(2)],
            ),
            (
                "end_ns",
                vec![Some(60), Some(2), Some(20), Some(5), Some(40), Some(3)],
            ),
        ]);
        let o = order(
            &b.schema(),
            &[("stream_id", true), ("start_ns", false), ("end_ns", false)],
        );
        assert_eq!(sorted_rows(&b, &o, 1), reference(&b, &o));
    }

    #[test]
    fn several_group_keys_with_nulls_group_by_their_row_encoding() {
        let b = batch(&[
            (
                "device_id",
                vec![Some(1), Some(0), Some(1), Some(0), None, None],
            ),
            (
                "stream_id",
                vec![Some(7), Some(7), Some(7), None, Some(7), Some(7)],
            ),
            (
                "start_ns",
                vec![Some(9), Some(8), Some(3), Some(1), Some(5), Some(4)],
            ),
        ]);
        let o = order(
            &b.schema(),
            &[
                ("device_id", false),
                ("stream_id", false),
                ("start_ns", false),
            ],
        );
        assert_eq!(sorted_rows(&b, &o, 2), reference(&b, &o));
    }
}
