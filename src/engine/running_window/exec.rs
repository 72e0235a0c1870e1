//! Engine: the running window's operator, a batch at a time: each batch's partitions
//! found with arrow's `partition`, each function computed over whole columns, what a
//! partition carries into the next batch kept between batches.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::{concat, partition, take};
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::sort_expr::OrderingRequirements;
use datafusion::physical_plan::distribution_requirements::InputDistributionRequirements;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::windows::BoundedWindowAggExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::{Aggregate, Function};

/// The window operator it replaces keeps its plan properties, its input's requirements and
/// its expressions; only the computation is this module's.
#[derive(Debug)]
pub struct RunningWindowExec {
    window: Arc<dyn ExecutionPlan>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    functions: Arc<Vec<Function>>,
    metrics: ExecutionPlanMetricsSet,
}

impl RunningWindowExec {
    /// In place of `window` (a `BoundedWindowAggExec`): its partition `keys`, its columns.
    pub(super) fn new(
        window: Arc<dyn ExecutionPlan>,
        keys: Vec<Arc<dyn PhysicalExpr>>,
        functions: Vec<Function>,
    ) -> Self {
        RunningWindowExec {
            window,
            keys,
            functions: Arc::new(functions),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for RunningWindowExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let window = self.window.downcast_ref::<BoundedWindowAggExec>();
        let names: Vec<&str> = window
            .map(|w| w.window_expr().iter().map(|e| e.name()).collect())
            .unwrap_or_default();
        write!(f, "RunningWindowExec: [{}]", names.join(", "))
    }
}

impl ExecutionPlan for RunningWindowExec {
    fn name(&self) -> &str {
        "RunningWindowExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.window.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.window.children()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        self.window.apply_expressions(f)
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.window.input_distribution_requirements()
    }

    fn required_input_ordering(&self) -> Vec<Option<OrderingRequirements>> {
        self.window.required_input_ordering()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.window.maintains_input_order()
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        self.window.benefits_from_input_partitioning()
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(RunningWindowExec {
            window: (self.window.clone()).replace_children(
                children,
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            )?,
            keys: self.keys.clone(),
            functions: self.functions.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let input = self.window.children()[0].execute(partition, context)?;
        let schema = self.schema();
        let state = Running {
            schema: schema.clone(),
            keys: self.keys.clone(),
            functions: self.functions.clone(),
            carries: self.functions.iter().map(|_| Carry::default()).collect(),
            last_keys: None,
            pending: None,
            metrics: BaselineMetrics::new(&self.metrics, partition),
        };
        let output = futures::stream::unfold(Some((input, state)), |step| async move {
            let (mut input, mut state) = step?;
            loop {
                let next = match input.next().await {
                    Some(Ok(batch)) => state.push(batch),
                    Some(Err(e)) => return Some((Err(e), None)),
                    None => {
                        return match state.finish() {
                            Ok(Some(batch)) => Some((Ok(batch), None)),
                            Ok(None) => None,
                            Err(e) => Some((Err(e), None)),
                        }
                    }
                };
                match next {
                    Ok(Some(batch)) => return Some((Ok(batch), Some((input, state)))),
                    Ok(None) => continue,
                    Err(e) => return Some((Err(e), None)),
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, output)))
    }
}

/// A batch whose window columns wait for the first row of the next (`LEAD` of its last row).
struct Pending {
    batch: RecordBatch,
    /// its runs of rows of one partition, in order
    runs: Vec<Range<usize>>,
    /// its first run goes on the partition of the batch before
    continues: bool,
}

/// What a function carries from one batch to the next, within a partition.
#[derive(Default)]
struct Carry {
    /// rows so far (`ROW_NUMBER`), or non-NULL values so far (`COUNT`)
    count: i64,
    /// the running aggregate so far (NULL while no value was seen)
    value: Option<i64>,
    /// the last row's value (`LAG`), the last non-NULL value (`last_seen`)
    last: Option<ArrayRef>,
}

/// Row `row` of `values` on its own: a text view array would otherwise keep all its
/// batch's text buffers, and the next batch's would hold those too, and so on.
fn own_row(values: &ArrayRef, row: usize) -> ArrayRef {
    compact(values.slice(row, 1))
}

/// `values` without the text buffers of other rows (view arrays only).
fn compact(values: ArrayRef) -> ArrayRef {
    match values.data_type() {
        DataType::Utf8View => Arc::new(values.as_string_view().gc()),
        DataType::BinaryView => Arc::new(values.as_binary_view().gc()),
        _ => values,
    }
}

struct Running {
    schema: Arc<Schema>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    functions: Arc<Vec<Function>>,
    carries: Vec<Carry>,
    /// the partition keys of the last row seen, one row each
    last_keys: Option<Vec<ArrayRef>>,
    pending: Option<Pending>,
    metrics: BaselineMetrics,
}

impl Running {
    /// Takes a batch in; gives back the one before it, now complete.
    fn push(&mut self, batch: RecordBatch) -> DfResult<Option<RecordBatch>> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(None);
        }
        let timer = self.metrics.elapsed_compute().clone();
        let timer = timer.timer();
        let keys = (self.keys.iter())
            .map(|k| k.evaluate(&batch)?.into_array(n))
            .collect::<DfResult<Vec<_>>>()?;
        let runs = if keys.is_empty() {
            std::iter::once(0..n).collect()
        } else {
            partition(&keys)?.ranges()
        };
        let continues = match &self.last_keys {
            None => false,
            Some(last) => same_keys(last, &keys)?,
        };
        self.last_keys = Some(keys.iter().map(|k| k.slice(n - 1, 1)).collect());
        let next = Pending {
            batch,
            runs,
            continues,
        };
        let done = match self.pending.take() {
            Some(before) => Some(self.complete(before, Some(&next))?),
            None => None,
        };
        self.pending = Some(next);
        timer.done();
        if let Some(batch) = &done {
            self.metrics.record_output(batch.num_rows());
        }
        Ok(done)
    }

    /// The last batch, complete.
    fn finish(&mut self) -> DfResult<Option<RecordBatch>> {
        let Some(last) = self.pending.take() else {
            return Ok(None);
        };
        let timer = self.metrics.elapsed_compute().clone();
        let timer = timer.timer();
        let batch = self.complete(last, None)?;
        timer.done();
        self.metrics.record_output(batch.num_rows());
        Ok(Some(batch))
    }

    /// `this` with its window columns; `next` is the batch after it, if any.
    fn complete(&mut self, this: Pending, next: Option<&Pending>) -> DfResult<RecordBatch> {
        let n = this.batch.num_rows();
        let mut columns = this.batch.columns().to_vec();
        for (function, carry) in self.functions.iter().zip(&mut self.carries) {
            let column = match function {
                Function::RowNumber => row_number(&this, carry),
                Function::Lag(x) => {
                    let values = x.evaluate(&this.batch)?.into_array(n)?;
                    let column = lag(&this, &values, carry.last.as_ref())?;
                    carry.last = Some(own_row(&values, n - 1));
                    column
                }
                Function::Lead(x) => {
                    let values = x.evaluate(&this.batch)?.into_array(n)?;
                    let after = match next {
                        Some(next) if next.continues => {
                            Some(x.evaluate(&next.batch.slice(0, 1))?.into_array(1)?)
                        }
                        _ => None,
                    };
                    lead(&this, &values, after.as_ref())?
                }
                Function::LastSeen(x) => {
                    let values = x.evaluate(&this.batch)?.into_array(n)?;
                    last_seen(&this, &values, carry)?
                }
                Function::Running {
                    aggregate,
                    arg,
                    through_previous,
                } => {
                    let values = arg.evaluate(&this.batch)?.into_array(n)?;
                    running(&this, &values, *aggregate, *through_previous, carry)
                }
            };
            columns.push(column);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// Whether the first row of `keys` has the partition keys of `last` (one row each).
fn same_keys(last: &[ArrayRef], keys: &[ArrayRef]) -> DfResult<bool> {
    for (a, b) in last.iter().zip(keys) {
        if distinct(a, &b.slice(0, 1))?.value(0) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether run `i` of `this` starts a partition (not one going on from the batch before).
fn starts_partition(this: &Pending, i: usize) -> bool {
    i > 0 || !this.continues
}

fn row_number(this: &Pending, carry: &mut Carry) -> ArrayRef {
    let mut out = Vec::with_capacity(this.batch.num_rows());
    for (i, run) in this.runs.iter().enumerate() {
        if starts_partition(this, i) {
            carry.count = 0;
        }
        out.extend((carry.count + 1..).take(run.len()).map(|n| n as u64));
        carry.count += run.len() as i64;
    }
    Arc::new(UInt64Array::from(out))
}

/// `values` moved one row down within each partition, the row before the batch's first
/// being `before` (one row, when there was a batch before).
fn lag(this: &Pending, values: &ArrayRef, before: Option<&ArrayRef>) -> DfResult<ArrayRef> {
    let (all, shift) = match before {
        Some(before) => (concat(&[before.as_ref(), values.as_ref()])?, 1),
        None => (values.clone(), 0),
    };
    let mut indices = Vec::with_capacity(values.len());
    for (i, run) in this.runs.iter().enumerate() {
        let first = match (starts_partition(this, i), before) {
            (false, Some(_)) => Some(0),
            _ => None,
        };
        indices.push(first);
        indices.extend((run.start + shift..run.end - 1 + shift).map(|r| Some(r as u32)));
    }
    Ok(take(&all, &UInt32Array::from(indices), None)?)
}

/// `values` moved one row up within each partition, the row after the batch's last being
/// `after` (one row, when the next batch goes on with the partition).
fn lead(this: &Pending, values: &ArrayRef, after: Option<&ArrayRef>) -> DfResult<ArrayRef> {
    let n = values.len();
    let all = match after {
        Some(after) => concat(&[values.as_ref(), after.as_ref()])?,
        None => values.clone(),
    };
    let mut indices = Vec::with_capacity(n);
    for run in &this.runs {
        indices.extend((run.start + 1..run.end).map(|r| Some(r as u32)));
        let last_run = run.end == n;
        indices.push((last_run && after.is_some()).then_some(n as u32));
    }
    Ok(take(&all, &UInt32Array::from(indices), None)?)
}

/// The last non-NULL value of each partition so far, the one carried from the batch before
/// first.
fn last_seen(this: &Pending, values: &ArrayRef, carry: &mut Carry) -> DfResult<ArrayRef> {
    let (all, shift) = match &carry.last {
        Some(last) => (concat(&[last.as_ref(), values.as_ref()])?, 1),
        None => (values.clone(), 0),
    };
    let mut indices: Vec<Option<u32>> = Vec::with_capacity(values.len());
    for (i, run) in this.runs.iter().enumerate() {
        let mut last = match starts_partition(this, i) {
            false if shift == 1 => Some(0),
            _ => None,
        };
        for row in run.clone() {
            if values.is_valid(row) {
                last = Some((row + shift) as u32);
            }
            indices.push(last);
        }
    }
    carry.last = match indices.last() {
        Some(Some(row)) => Some(own_row(&all, *row as usize)),
        _ => None,
    };
    Ok(compact(take(&all, &UInt32Array::from(indices), None)?))
}

/// The running aggregate of `values` over each partition, through each row or through the
/// row before it. SUM wraps on overflow, as DataFusion's does.
fn running(
    this: &Pending,
    values: &ArrayRef,
    aggregate: Aggregate,
    through_previous: bool,
    carry: &mut Carry,
) -> ArrayRef {
    let n = values.len();
    if let Aggregate::Count = aggregate {
        let mut out = Vec::with_capacity(n);
        for (i, run) in this.runs.iter().enumerate() {
            if starts_partition(this, i) {
                carry.count = 0;
            }
            for row in run.clone() {
                let before = carry.count;
                carry.count += values.is_valid(row) as i64;
                out.push(if through_previous {
                    before
                } else {
                    carry.count
                });
            }
        }
        return Arc::new(Int64Array::from(out));
    }
    let ints = values.as_primitive::<Int64Type>();
    let combine = |a: i64, b: i64| match aggregate {
        Aggregate::Sum => a.wrapping_add(b),
        Aggregate::Min => a.min(b),
        Aggregate::Max => a.max(b),
        Aggregate::Count => unreachable!("counted above"),
    };
    let mut out = Vec::with_capacity(n);
    for (i, run) in this.runs.iter().enumerate() {
        if starts_partition(this, i) {
            carry.value = None;
        }
        for row in run.clone() {
            let before = carry.value;
            if ints.is_valid(row) {
                let v = ints.value(row);
                carry.value = Some(carry.value.map_or(v, |a| combine(a, v)));
            }
            out.push(if through_previous {
                before
            } else {
                carry.value
            });
        }
    }
    Arc::new(Int64Array::from(out))
}
