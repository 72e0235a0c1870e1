//! Engine: window functions over rows that come in partition order, computed over whole
//! batches. DataFusion's `BoundedWindowAggExec` calls the function once per row and builds a
//! `ScalarValue` for each answer: a running `MAX(end_ns) OVER (PARTITION BY stream ORDER BY
//! start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)` took 766 ms of compute over
//! 4.05 M kernels (docs/engine.md, "Running windows").
//!
//! The shapes taken, each only where the rows already come in the window's order (the
//! window's "Sorted" mode), since one pass in input order is then the whole computation:
//! - `LAG(x)` and `LEAD(x)` (offset 1, no default), `ROW_NUMBER()`;
//! - `SUM`, `MIN`, `MAX` of a BIGINT and `COUNT` over `ROWS UNBOUNDED PRECEDING` or
//!   `ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING`;
//! - our own [`super::last_seen`] and [`super::enclosing`] (the critical path's call stacks
//!   and wait sources).
//!
//! A window with any other function is left to DataFusion.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array, UInt64Array,
};
use datafusion::arrow::compute::kernels::cmp::distinct;
use datafusion::arrow::compute::{cast, concat, partition, take};
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::ScalarValue;
use datafusion::config::ConfigOptions;
use datafusion::error::Result as DfResult;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits};
use datafusion::physical_expr::window::{PlainAggregateWindowExpr, StandardWindowExpr};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::sort_expr::OrderingRequirements;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::distribution_requirements::InputDistributionRequirements;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::metrics::{BaselineMetrics, ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowUDFExpr};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, InputOrderMode, PlanProperties,
    SendableRecordBatchStream, WindowExpr,
};
use futures::StreamExt;

/// Replaces a `BoundedWindowAggExec` in sorted mode whose every function is one of the
/// shapes above.
#[derive(Debug)]
pub struct RunningWindowRule;

impl PhysicalOptimizerRule for RunningWindowRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(window) = node.downcast_ref::<BoundedWindowAggExec>() else {
                return Ok(Transformed::no(node));
            };
            if window.input_order_mode != InputOrderMode::Sorted {
                return Ok(Transformed::no(node));
            }
            let input = window.input().schema();
            let mut functions = Vec::new();
            for expr in window.window_expr() {
                match function_of(expr, &input)? {
                    Some(function) => functions.push(function),
                    None => return Ok(Transformed::no(node)),
                }
            }
            let keys = window.partition_keys();
            Ok(Transformed::yes(Arc::new(RunningWindowExec {
                window: node.clone(),
                keys,
                functions: Arc::new(functions),
                metrics: ExecutionPlanMetricsSet::new(),
            })))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "running_window"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// One window column, as this operator computes it.
#[derive(Debug)]
enum Function {
    RowNumber,
    /// the value of the row before in the partition
    Lag(Arc<dyn PhysicalExpr>),
    /// the value of the row after in the partition
    Lead(Arc<dyn PhysicalExpr>),
    /// the last non-NULL value so far in the partition
    LastSeen(Arc<dyn PhysicalExpr>),
    /// the op each start opens inside (`enclosing(is_start, name)`)
    Enclosing {
        is_start: Arc<dyn PhysicalExpr>,
        name: Arc<dyn PhysicalExpr>,
    },
    /// an aggregate of the partition's rows so far: through this row, or through the one
    /// before (`through_previous`)
    Running {
        aggregate: Aggregate,
        arg: Arc<dyn PhysicalExpr>,
        through_previous: bool,
    },
}

#[derive(Debug, Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
    Count,
}

/// What `expr` computes, when it is a shape this operator takes.
fn function_of(expr: &Arc<dyn WindowExpr>, input: &Schema) -> DfResult<Option<Function>> {
    let output = expr.field()?.data_type().clone();
    if let Some(standard) = expr.as_any().downcast_ref::<StandardWindowExpr>() {
        return standard_function(standard, input, &output);
    }
    let Some(plain) = expr.as_any().downcast_ref::<PlainAggregateWindowExpr>() else {
        return Ok(None);
    };
    let frame = plain.get_window_frame();
    let unbounded_start =
        matches!(&frame.start_bound, WindowFrameBound::Preceding(v) if v.is_null());
    let through_previous = match &frame.end_bound {
        WindowFrameBound::CurrentRow => false,
        WindowFrameBound::Preceding(ScalarValue::UInt64(Some(1))) => true,
        _ => return Ok(None),
    };
    let aggregate = plain.get_aggregate_expr();
    let args = aggregate.expressions();
    if frame.units != WindowFrameUnits::Rows
        || !unbounded_start
        || aggregate.is_distinct()
        || !no_filter(plain)
        || args.len() != 1
        || output != DataType::Int64
    {
        return Ok(None);
    }
    let aggregate = match aggregate.fun().name() {
        "sum" => Aggregate::Sum,
        "min" => Aggregate::Min,
        "max" => Aggregate::Max,
        "count" => Aggregate::Count,
        _ => return Ok(None),
    };
    let arg = args[0].clone();
    if !matches!(aggregate, Aggregate::Count) && arg.data_type(input)? != DataType::Int64 {
        return Ok(None);
    }
    Ok(Some(Function::Running {
        aggregate,
        arg,
        through_previous,
    }))
}

/// Whether the aggregate has no `FILTER (WHERE ...)`. DataFusion 55 keeps that in a private
/// trait, so it is read from the expression's debug form, which ends with the field.
fn no_filter(plain: &PlainAggregateWindowExpr) -> bool {
    format!("{plain:?}").ends_with("filter: None }")
}

/// `LAG(x)`, `LEAD(x)` or `ROW_NUMBER()`, told apart by what DataFusion's own evaluator
/// answers on four rows: that covers the offset, the default, `IGNORE NULLS` and a function
/// turned around for rows in the reverse order, whatever the SQL said. Or one of our own
/// window functions.
fn standard_function(
    standard: &StandardWindowExpr,
    input: &Schema,
    output: &DataType,
) -> DfResult<Option<Function>> {
    let function = standard.get_standard_func_expr();
    let Some(udf) = function.as_any().downcast_ref::<WindowUDFExpr>() else {
        return Ok(None);
    };
    let mut evaluator = function.create_evaluator()?;
    if evaluator.uses_window_frame() || evaluator.include_rank() {
        return Ok(None);
    }
    let args = function.expressions();
    if **udf.fun() == super::last_seen::udwf() && args.len() == 1 {
        return Ok(Some(Function::LastSeen(args[0].clone())));
    }
    if **udf.fun() == super::enclosing::udwf()
        && args.len() == 2
        && args[0].data_type(input)? == DataType::Boolean
    {
        return Ok(Some(Function::Enclosing {
            is_start: args[0].clone(),
            name: args[1].clone(),
        }));
    }
    match (udf.fun().name(), args.as_slice()) {
        ("row_number", []) => {
            let Ok(got) = evaluator.evaluate_all(&[], 4) else {
                return Ok(None);
            };
            let want: ArrayRef = Arc::new(UInt64Array::from(vec![1, 2, 3, 4]));
            Ok(
                (output == &DataType::UInt64 && got.as_ref() == want.as_ref())
                    .then_some(Function::RowNumber),
            )
        }
        ("lag" | "lead", [x]) => {
            let arg_type = x.data_type(input)?;
            if &arg_type != output {
                return Ok(None);
            }
            let probe: ArrayRef =
                Arc::new(Int64Array::from(vec![Some(10), None, Some(30), Some(40)]));
            let Ok(probe) = cast(&probe, &arg_type) else {
                return Ok(None);
            };
            let Ok(got) = evaluator.evaluate_all(std::slice::from_ref(&probe), 4) else {
                return Ok(None);
            };
            let moved =
                |rows: [Option<u32>; 4]| take(&probe, &UInt32Array::from(rows.to_vec()), None);
            let (lag, lead) = (
                moved([None, Some(0), Some(1), Some(2)])?,
                moved([Some(1), Some(2), Some(3), None])?,
            );
            Ok(if got.as_ref() == lag.as_ref() {
                Some(Function::Lag(x.clone()))
            } else if got.as_ref() == lead.as_ref() {
                Some(Function::Lead(x.clone()))
            } else {
                None
            })
        }
        _ => Ok(None),
    }
}

/// The window operator it replaces keeps its plan properties, its input's requirements and
/// its expressions; only the computation is this module's.
#[derive(Debug)]
pub struct RunningWindowExec {
    window: Arc<dyn ExecutionPlan>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    functions: Arc<Vec<Function>>,
    metrics: ExecutionPlanMetricsSet,
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
    /// the running level and, per level, the last op opened there (`enclosing`)
    level: i64,
    opened: Vec<(i64, ArrayRef)>,
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
                Function::Enclosing { is_start, name } => {
                    let is_start = is_start.evaluate(&this.batch)?.into_array(n)?;
                    let name = name.evaluate(&this.batch)?.into_array(n)?;
                    enclosing(&this, &is_start, &name, carry)?
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

/// `enclosing(is_start, name)` (see [`super::enclosing`]), the level and the ops open at
/// each level carried from the batch before.
fn enclosing(
    this: &Pending,
    is_start: &ArrayRef,
    name: &ArrayRef,
    carry: &mut Carry,
) -> DfResult<ArrayRef> {
    // the carried ops' names first, then the batch's
    let carried = carry.opened.len();
    let mut parts: Vec<&dyn Array> = carry.opened.iter().map(|(_, v)| v.as_ref()).collect();
    parts.push(name.as_ref());
    let all = concat(&parts)?;
    let mut opened: HashMap<i64, u32> = (carry.opened.iter().enumerate())
        .map(|(i, (level, _))| (*level, i as u32))
        .collect();
    let mut indices: Vec<Option<u32>> = Vec::with_capacity(name.len());
    for (i, run) in this.runs.iter().enumerate() {
        if starts_partition(this, i) {
            carry.level = 0;
            opened.clear();
        }
        for row in run.clone() {
            indices.push(
                super::enclosing::step(&mut carry.level, is_start, row).and_then(|level| {
                    let parent = opened.get(&(level - 1)).copied();
                    opened.insert(level, (row + carried) as u32);
                    parent
                }),
            );
        }
    }
    carry.opened = (opened.into_iter())
        .map(|(level, row)| (level, own_row(&all, row as usize)))
        .collect();
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
