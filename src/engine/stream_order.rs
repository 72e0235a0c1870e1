//! Engine: sorts that a window's file order has mostly done already. Every writer of ours
//! writes a GPU activity table in time order per stream and says so in the file
//! ([`ROW_ORDER_KEY`], docs/engine.md "Known order"); the catalog passes each file's claim on
//! to the session ([`OrderClaims`]). A query that orders rows by stream
//! and then by time (`lag(end_ns) over (partition by stream_id order by start_ns)`) still
//! makes DataFusion sort them, comparing every row's keys in a sort and a merge.
//!
//! [`KnownStreamOrder`] puts a [`StreamSortExec`] in place of such a sort: one pass deals each
//! partition's rows out to their streams, keeping their order, and checks the time order as
//! it goes. A stream whose rows did not come in order is sorted there, so the answer never
//! rests on the claim; the claim only decides where the pass is tried.
//!
//! ```text
//!   BoundedWindowAggExec                       BoundedWindowAggExec
//!     SortExec [stream, start]           ->      RepartitionExec hash(stream), preserve_order
//!       RepartitionExec hash(stream)               StreamSortExec [stream, start]
//!         DataSourceExec (row_order claim)           DataSourceExec (row_order claim)
//! ```
//!
//! The hash exchange merges its inputs' sorted runs (two on two cores) instead of a sort
//! merging one run per batch. Measured: see docs/engine.md "Known order".

use std::any::Any;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{
    concat_batches, take_record_batch, LexicographicalComparator, SortColumn,
};
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::config::{ConfigEntry, ConfigExtension, ConfigOptions, ExtensionOptions};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, PhysicalExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use futures::{stream, TryStreamExt};

/// The Parquet key-value metadata (and table schema metadata) that claims the order:
/// `<group columns>;<time columns>`, e.g. `device_id,context_id,stream_id;start_ns,end_ns`:
/// the rows of each group are in time order.
pub const ROW_ORDER_KEY: &str = "tracesql.row_order";

/// The order our writers claim for the GPU activity tables.
pub const STREAM_ROW_ORDER: &str = "device_id,context_id,stream_id;start_ns,end_ns";

/// The claims of a session's files, by the name a scan gives each file (its object store
/// location): the catalog fills them as it registers a window, [`KnownStreamOrder`] reads
/// them. A session option, so sessions keep their own; not a table schema's metadata, which
/// would travel into every result.
#[derive(Debug, Clone, Default)]
pub struct OrderClaims(Arc<RwLock<HashMap<String, String>>>);

impl OrderClaims {
    /// The claims of `ctx`'s session (every session of [`super::session`] has them).
    pub fn of(ctx: &SessionContext) -> Option<OrderClaims> {
        let state = ctx.state();
        state
            .config()
            .options()
            .extensions
            .get::<OrderClaims>()
            .cloned()
    }

    /// Record that the file at `location` claims `claim`.
    pub fn insert(&self, location: String, claim: String) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(location, claim);
    }

    /// The claim every file of `scan` makes, if they all make the same one.
    fn of_scan(&self, scan: &FileScanConfig) -> Option<Claim> {
        let claims = self.0.read().unwrap_or_else(|e| e.into_inner());
        let mut files = scan.file_groups.iter().flat_map(|g| g.iter());
        let first = claims.get(files.next()?.object_meta.location.as_ref())?;
        if !files.all(|f| claims.get(f.object_meta.location.as_ref()) == Some(first)) {
            return None;
        }
        Claim::parse(first)
    }
}

impl ExtensionOptions for OrderClaims {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone()) // the same claims: a session's copies of its state share them
    }

    fn set(&mut self, key: &str, _value: &str) -> DfResult<()> {
        Err(DataFusionError::Configuration(format!(
            "{}.{key}: the row order claims are read from the files, not set",
            Self::PREFIX
        )))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for OrderClaims {
    const PREFIX: &'static str = "tracesql_row_order";
}

/// A claim read back: the group columns and the time columns.
struct Claim {
    groups: Vec<String>,
    times: Vec<String>,
}

impl Claim {
    fn parse(text: &str) -> Option<Claim> {
        let (groups, times) = text.split_once(';')?;
        let names = |s: &str| -> Vec<String> {
            s.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        };
        let claim = Claim {
            groups: names(groups),
            times: names(times),
        };
        (!claim.groups.is_empty() && !claim.times.is_empty()).then_some(claim)
    }

    /// How many leading keys are group columns, when they are followed by the first time
    /// column ascending (the shape the pass serves); None otherwise.
    fn group_keys(&self, keys: &[Key]) -> Option<usize> {
        let named = |i: usize| keys.get(i).and_then(|k| k.column.as_deref());
        let mut n = 0;
        while named(n).is_some_and(|c| self.groups.iter().any(|g| g == c)) {
            n += 1;
        }
        let time_first = named(n) == Some(self.times[0].as_str()) && !keys[n].descending;
        (n > 0 && time_first).then_some(n)
    }
}

/// A sort key as seen from one operator: the column it reads there (None: an expression).
#[derive(Clone)]
struct Key {
    column: Option<String>,
    index: Option<usize>,
    descending: bool,
}

impl Key {
    fn of(order: &LexOrdering, schema: &SchemaRef) -> Vec<Key> {
        (order.iter())
            .map(|e| {
                let index = e.expr.downcast_ref::<Column>().map(Column::index);
                Key {
                    column: index.and_then(|i| Some(schema.fields().get(i)?.name().clone())),
                    index,
                    descending: e.options.descending,
                }
            })
            .collect()
    }

    /// The key one operator down, where output column `i` is input column `map(i)`.
    fn through(&self, map: impl Fn(usize) -> Option<usize>, input: &SchemaRef) -> Key {
        let index = self.index.and_then(map);
        Key {
            column: index.and_then(|i| Some(input.fields().get(i)?.name().clone())),
            index,
            descending: self.descending,
        }
    }
}

/// How many leading `keys` (read at `plan`'s output) every scan under `plan` claims as its
/// groups, followed by its first time column: operators that keep each partition's rows in
/// order are passed through, with their renames; a union needs it of every input. `Some(None)`:
/// no rows at all (an empty table), which serves any order.
fn served(
    plan: &Arc<dyn ExecutionPlan>,
    keys: &[Key],
    claims: &OrderClaims,
) -> Option<Option<usize>> {
    let down = |child: &Arc<dyn ExecutionPlan>, map: &dyn Fn(usize) -> Option<usize>| {
        let input = child.schema();
        let keys: Vec<Key> = keys.iter().map(|k| k.through(map, &input)).collect();
        served(child, &keys, claims)
    };
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let column = |i: usize| p.expr()[i].expr.downcast_ref::<Column>().map(Column::index);
        return down(p.input(), &column);
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        let projection = f.projection().clone();
        return down(f.input(), &|i| {
            Some(projection.as_ref().map_or(i, |p| p[i]))
        });
    }
    if plan.downcast_ref::<CooperativeExec>().is_some() {
        return down(&plan.children()[0].clone(), &Some);
    }
    if let Some(u) = plan.downcast_ref::<UnionExec>() {
        let mut agreed = None;
        for child in u.children() {
            match (down(child, &Some)?, agreed) {
                (None, _) => {}
                (Some(n), None) => agreed = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return None,
            }
        }
        return Some(agreed);
    }
    if plan.downcast_ref::<EmptyExec>().is_some() {
        return Some(None);
    }
    let scan = plan.downcast_ref::<DataSourceExec>()?;
    let files = scan.data_source().downcast_ref::<FileScanConfig>()?;
    let mut claim = claims.of_scan(files)?;
    // A partition column (window_id, rank) is one value per file: a group column too.
    (claim.groups).extend(
        files
            .table_partition_cols()
            .iter()
            .map(|f| f.name().clone()),
    );
    // The scan's own projection (`start_ns AS ts`), back to the table's columns.
    let keys: Vec<Key> = match files.file_source().projection() {
        Some(projection) => {
            let exprs = projection.as_ref();
            let column = |i: usize| {
                exprs
                    .get(i)?
                    .expr
                    .downcast_ref::<Column>()
                    .map(Column::index)
            };
            let table = files.file_source().table_schema().table_schema().clone();
            keys.iter().map(|k| k.through(column, &table)).collect()
        }
        None => keys.to_vec(),
    };
    claim.group_keys(&keys).map(Some)
}

/// Replaces a sort by stream and time over a scan that claims that order (see the module).
#[derive(Debug)]
pub struct KnownStreamOrder;

impl PhysicalOptimizerRule for KnownStreamOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let Some(claims) = config.extensions.get::<OrderClaims>() else {
            return Ok(plan);
        };
        plan.transform_up(|node| match replacement(&node, claims)? {
            Some(new) => Ok(Transformed::yes(new)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "known_stream_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn replacement(
    node: &Arc<dyn ExecutionPlan>,
    claims: &OrderClaims,
) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    let Some(sort) = node.downcast_ref::<SortExec>() else {
        return Ok(None);
    };
    if sort.fetch().is_some() {
        return Ok(None); // a top-k keeps few rows; it is cheap already
    }
    // A hash exchange right below the sort is kept, above the pass, merging sorted inputs.
    let (below, exchange) = match sort.input().downcast_ref::<RepartitionExec>() {
        Some(r) if matches!(r.partitioning(), Partitioning::Hash(..)) && !r.preserve_order() => {
            (r.input().clone(), Some(r.partitioning().clone()))
        }
        _ => (sort.input().clone(), None),
    };
    let keys = Key::of(sort.expr(), &below.schema());
    let Some(Some(group_len)) = served(&below, &keys, claims) else {
        return Ok(None);
    };
    let order = sort.expr().clone();
    let mut new: Arc<dyn ExecutionPlan> =
        Arc::new(StreamSortExec::new(below, order.clone(), group_len));
    if let Some(partitioning) = exchange {
        new = Arc::new(RepartitionExec::try_new(new, partitioning)?.with_preserve_order());
    }
    if !sort.preserve_partitioning() && new.output_partitioning().partition_count() > 1 {
        new = Arc::new(SortPreservingMergeExec::new(order, new));
    }
    Ok(Some(new))
}

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
        for e in self.order.iter() {
            if f(&e.expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
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
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match (children.pop(), children.is_empty()) {
            (Some(input), true) => Ok(Arc::new(StreamSortExec::new(
                input,
                self.order.clone(),
                self.group_len,
            ))),
            _ => Err(DataFusionError::Internal(
                "StreamSortExec has one input".into(),
            )),
        }
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
    (sorted.permutation.chunks(batch_size.max(1)))
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
    let by_all = LexicographicalComparator::try_new(&columns)?;
    let cmp = |a: &u32, b: &u32| by_all.compare(*a as usize, *b as usize);
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
    // One non-null integer key (a stream id): grouped by value, without a row encoding.
    if let [key] = keys {
        if let Some(values) = key.values.as_primitive_opt::<Int64Type>() {
            if values.null_count() == 0 {
                let mut ids: HashMap<i64, u32, _> = HashMap::with_hasher(hasher);
                for (row, v) in values.values().iter().enumerate() {
                    let next = firsts.len() as u32;
                    let id = *ids.entry(*v).or_insert_with(|| {
                        firsts.push(row);
                        next
                    });
                    group_of.push(id);
                }
                return Ok((group_of, firsts));
            }
        }
    }
    let fields = keys
        .iter()
        .map(|k| SortField::new(k.values.data_type().clone()))
        .collect();
    let arrays: Vec<ArrayRef> = keys.iter().map(|k| k.values.clone()).collect();
    let rows = RowConverter::new(fields)?.convert_columns(&arrays)?;
    let mut ids: HashMap<&[u8], u32, _> = HashMap::with_hasher(hasher);
    for (row, key) in rows.iter().enumerate() {
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

    #[test]
    fn the_claim_serves_group_keys_followed_by_ascending_time() {
        let claim = Claim::parse(STREAM_ROW_ORDER).unwrap();
        let b = batch(&[
            ("stream_id", vec![Some(1)]),
            ("start_ns", vec![Some(1)]),
            ("end_ns", vec![Some(1)]),
        ]);
        let s = b.schema();
        let served = |keys: &[(&str, bool)]| claim.group_keys(&Key::of(&order(&s, keys), &s));
        assert_eq!(
            served(&[("stream_id", false), ("start_ns", false)]),
            Some(1)
        );
        assert_eq!(
            served(&[("stream_id", true), ("start_ns", false), ("end_ns", false)]),
            Some(1)
        );
        assert_eq!(served(&[("start_ns", false)]), None, "no group key");
        assert_eq!(
            served(&[("stream_id", false), ("end_ns", false)]),
            None,
            "not start first"
        );
        assert_eq!(
            served(&[("stream_id", false), ("start_ns", true)]),
            None,
            "time descending"
        );
        assert!(Claim::parse("stream_id").is_none());
    }
}
