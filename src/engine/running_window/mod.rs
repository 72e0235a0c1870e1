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
//! - our own [`super::last_seen`] (the critical path's wait sources).
//!
//! A window with any other function is left to DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, UInt32Array, UInt64Array};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::ScalarValue;
use datafusion::config::ConfigOptions;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits};
use datafusion::physical_expr::window::{PlainAggregateWindowExpr, StandardWindowExpr};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowUDFExpr};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode, WindowExpr};

mod exec;
pub use exec::RunningWindowExec;

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
            Ok(Transformed::yes(Arc::new(RunningWindowExec::new(
                node.clone(),
                keys,
                functions,
            ))))
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
