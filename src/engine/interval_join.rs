//! Engine: joins by time containment or overlap, by a sorted index instead of every pair.
//!
//! An inner join whose filter bounds one side's times by the other's (an op inside an
//! annotation or a step, a call inside a range its thread had open, two kernels that overlap)
//! is planned by DataFusion as a nested loop, or as a hash join on the thread or device whose
//! filter is tried on every pair of that thread: minutes at 10 M events, which the SQL used to
//! dodge with buckets of time. [`IntervalJoinRule`] finds in such a filter the two bounds
//!
//! ```text
//!   build.start <= probe.hi   AND   build.end >= probe.lo      (< and > too, either way round)
//! ```
//!
//! and puts [`IntervalJoinExec`] in the join's place. The build side's rows are grouped by the
//! join's equal keys and sorted by `start`. A probe row meets the rows of its group before the
//! first `start > hi` (a binary search) whose `end >= lo`. Where a group's ends come in order
//! too (points such as a call's `ts`; ranges that do not nest, such as steps) those are a
//! slice, a second binary search. Else (nested annotations, overlapping kernels) a tree holds
//! the greatest `end` of each run of rows, and a descent skips the runs whose greatest end is
//! below `lo`: time in proportion to the rows found, not to the group.
//!
//! ```text
//!   build rows by start:   [s0,e0] [s1,e1] [s2,e2] [s3,e3] [s4,e4] [s5,e5]
//!                           \_____ start <= hi ______________/   (binary search)
//!   greatest end per run:   ...... max(e0..e3) ......
//!                           max(e0,e1)  max(e2,e3)              (skip a run whose max < lo)
//! ```
//!
//! The pairs found meet both bounds exactly (NULLs meet nothing); the filter's other conjuncts
//! are checked on them, so the answer is the hash join's, row for row. A probe row's matches
//! come in build start order and probe rows keep their order.
//! Figures (containment questions against DuckDB and DataFusion's own plans): docs/engine.md,
//! "Interval joins".

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::config::ConfigOptions;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, Column};
use datafusion::physical_expr::{
    conjunction_opt, split_conjunction, PhysicalExpr, PhysicalExprRef,
};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::joins::{HashJoinExec, NestedLoopJoinExec, PartitionMode};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    apply_expression_roots, DisplayAs, DisplayFormatType, ExecutionPlan,
    InputDistributionRequirements, PlanProperties, SendableRecordBatchStream,
};
use futures::{stream, StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use super::interval_index::{Build, Joiner};

/// The rule: an inner hash or nested-loop join whose filter holds both bounds becomes an
/// [`IntervalJoinExec`] over the same inputs, distributed as the join was.
#[derive(Debug, Default)]
pub struct IntervalJoinRule;

impl PhysicalOptimizerRule for IntervalJoinRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| match IntervalJoinExec::replacing(&node)? {
            Some(new) => Ok(Transformed::yes(Arc::new(new) as Arc<dyn ExecutionPlan>)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "interval_join"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The two bounds, each side's expressions over its own input's columns: a build row meets a
/// probe row when `start <= hi` (`<` when `start_strict`) and `end >= lo` (`>` when
/// `end_strict`). `rest`: the filter's other conjuncts, checked on the rows that meet.
#[derive(Debug, Clone)]
pub(super) struct Bounds {
    pub(super) start: PhysicalExprRef,
    pub(super) end: PhysicalExprRef,
    pub(super) hi: PhysicalExprRef,
    pub(super) lo: PhysicalExprRef,
    pub(super) start_strict: bool,
    pub(super) end_strict: bool,
    pub(super) rest: Option<PhysicalExprRef>,
}

impl Bounds {
    /// The first `build <= probe` and the first `build >= probe` among the filter's
    /// conjuncts (strict or not, written either way round), over BIGINT values.
    fn of(filter: &JoinFilter) -> DfResult<Option<Bounds>> {
        let (mut upper, mut lower, mut rest) = (None, None, vec![]);
        for conjunct in split_conjunction(filter.expression()) {
            let Some(b) = conjunct.downcast_ref::<BinaryExpr>() else {
                rest.push(conjunct.clone());
                continue;
            };
            let (l, r) = (side_of(b.left(), filter), side_of(b.right(), filter));
            let (build, probe, op) = match (l, r) {
                (Some(JoinSide::Left), Some(JoinSide::Right)) => (b.left(), b.right(), *b.op()),
                (Some(JoinSide::Right), Some(JoinSide::Left)) => match b.op().swap() {
                    Some(op) => (b.right(), b.left(), op),
                    None => (b.right(), b.left(), Operator::Eq),
                },
                _ => (b.left(), b.right(), Operator::Eq),
            };
            let bigints = is_bigint(build, filter)? && is_bigint(probe, filter)?;
            let side = || -> DfResult<_> { Ok((on_side(build, filter)?, on_side(probe, filter)?)) };
            match op {
                Operator::Lt | Operator::LtEq if bigints && upper.is_none() => {
                    upper = Some((side()?, op == Operator::Lt))
                }
                Operator::Gt | Operator::GtEq if bigints && lower.is_none() => {
                    lower = Some((side()?, op == Operator::Gt))
                }
                _ => rest.push(conjunct.clone()),
            }
        }
        Ok(match (upper, lower) {
            (Some(((start, hi), start_strict)), Some(((end, lo), end_strict))) => Some(Bounds {
                start,
                end,
                hi,
                lo,
                start_strict,
                end_strict,
                rest: conjunction_opt(rest),
            }),
            _ => None,
        })
    }
}

/// The one side whose columns `expr` reads, in the filter's column numbering.
fn side_of(expr: &PhysicalExprRef, filter: &JoinFilter) -> Option<JoinSide> {
    let mut side = None;
    let mut mixed = false;
    expr.apply(|e| {
        if let Some(c) = e.downcast_ref::<Column>() {
            let s = filter.column_indices()[c.index()].side;
            mixed |= side.is_some_and(|seen| seen != s);
            side = Some(s);
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .ok()?;
    if mixed {
        None
    } else {
        side
    }
}

fn is_bigint(expr: &PhysicalExprRef, filter: &JoinFilter) -> DfResult<bool> {
    Ok(expr.data_type(filter.schema())? == DataType::Int64)
}

/// `expr` over its side's input columns instead of the filter's.
fn on_side(expr: &PhysicalExprRef, filter: &JoinFilter) -> DfResult<PhysicalExprRef> {
    expr.clone()
        .transform(|e| match e.downcast_ref::<Column>() {
            Some(c) => {
                let index = filter.column_indices()[c.index()].index;
                Ok(Transformed::yes(
                    Arc::new(Column::new(c.name(), index)) as PhysicalExprRef
                ))
            }
            None => Ok(Transformed::no(e)),
        })
        .map(|t| t.data)
}

/// An inner join of `left` (built, grouped by the `on` keys and sorted by start) and `right`
/// (streamed) by [`Bounds`], then by the filter's other conjuncts; see the module's figure.
#[derive(Debug)]
pub struct IntervalJoinExec {
    left: Arc<dyn ExecutionPlan>,
    right: Arc<dyn ExecutionPlan>,
    on: Vec<(PhysicalExprRef, PhysicalExprRef)>,
    filter: JoinFilter,
    bounds: Bounds,
    /// the build side is every left partition, shared (else left partition i for right's i)
    collect_left: bool,
    projection: Option<Vec<usize>>,
    /// the join's properties, projected: the same rows, the probe side's order kept
    properties: Arc<PlanProperties>,
    distribution: InputDistributionRequirements,
    build: Arc<OnceCell<Arc<Build>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl IntervalJoinExec {
    /// The interval join standing for `node` when it is an inner join by bounds.
    fn replacing(node: &Arc<dyn ExecutionPlan>) -> DfResult<Option<IntervalJoinExec>> {
        let (left, right, on, filter, collect_left, projection) = if let Some(j) =
            node.downcast_ref::<HashJoinExec>()
        {
            let collect_left = match j.mode {
                PartitionMode::CollectLeft => true,
                PartitionMode::Partitioned => false,
                PartitionMode::Auto => return Ok(None),
            };
            if j.join_type != JoinType::Inner
                || j.null_equality != NullEquality::NullEqualsNothing
                || j.null_aware
                || j.fetch().is_some()
            {
                return Ok(None);
            }
            let keys_alike = j.on.iter().try_fold(true, |alike, (l, r)| {
                Ok::<_, DataFusionError>(
                    alike && l.data_type(&j.left.schema())? == r.data_type(&j.right.schema())?,
                )
            })?;
            if !keys_alike {
                return Ok(None);
            }
            let projection = j.projection.as_ref().map(|p| p.to_vec());
            (
                &j.left,
                &j.right,
                j.on.clone(),
                j.filter.as_ref(),
                collect_left,
                projection,
            )
        } else if let Some(j) = node.downcast_ref::<NestedLoopJoinExec>() {
            if *j.join_type() != JoinType::Inner || j.fetch().is_some() {
                return Ok(None);
            }
            let projection = j.projection().as_ref().map(|p| p.to_vec());
            (j.left(), j.right(), vec![], j.filter(), true, projection)
        } else {
            return Ok(None);
        };
        let Some(filter) = filter else {
            return Ok(None);
        };
        let Some(bounds) = Bounds::of(filter)? else {
            return Ok(None);
        };
        Ok(Some(IntervalJoinExec {
            left: left.clone(),
            right: right.clone(),
            on,
            filter: filter.clone(),
            bounds,
            collect_left,
            projection,
            properties: node.properties().clone(),
            distribution: node.input_distribution_requirements(),
            build: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }
}

impl DisplayAs for IntervalJoinExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let on: Vec<String> = self.on.iter().map(|(l, r)| format!("({l}, {r})")).collect();
        let b = &self.bounds;
        write!(
            f,
            "IntervalJoinExec: mode={}, on=[{}], bounds=[{} <= {}, {} >= {}], filter={}",
            if self.collect_left {
                "CollectLeft"
            } else {
                "Partitioned"
            },
            on.join(", "),
            b.start,
            b.hi,
            b.end,
            b.lo,
            self.filter.expression()
        )?;
        if let Some(p) = &self.projection {
            write!(f, ", projection={p:?}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for IntervalJoinExec {
    fn name(&self) -> &str {
        "IntervalJoinExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.left, &self.right]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        let keys = self.on.iter().flat_map(|(l, r)| [l, r]);
        apply_expression_roots(keys.chain([self.filter.expression()]), f)
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.distribution.clone()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false, true]
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [left, right]: [Arc<dyn ExecutionPlan>; 2] = children
            .try_into()
            .map_err(|_| DataFusionError::Internal("IntervalJoinExec has two inputs".into()))?;
        Ok(Arc::new(self.fresh(left, right)))
    }

    /// A recursive query runs the plan again over new rows: the build side is built again.
    fn reset_state(self: Arc<Self>) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(self.fresh(self.left.clone(), self.right.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let probe = self.right.execute(partition, context.clone())?;
        let build = {
            let (left, context, cell) = (self.left.clone(), context.clone(), self.build.clone());
            let (keys, bounds) = (self.build_keys(), self.bounds.clone());
            let collect_left = self.collect_left;
            async move {
                let parts = if collect_left {
                    0..left.properties().partitioning.partition_count()
                } else {
                    partition..partition + 1
                };
                let build = || async {
                    let mut batches = vec![];
                    for p in parts {
                        batches.extend(
                            left.execute(p, context.clone())?
                                .try_collect::<Vec<_>>()
                                .await?,
                        );
                    }
                    let batch = concat_batches(&left.schema(), &batches)?;
                    Build::new(batch, &keys, &bounds).map(Arc::new)
                };
                if collect_left {
                    cell.get_or_try_init(build).await.cloned()
                } else {
                    build().await
                }
            }
        };
        let join = Arc::new(Joiner {
            schema: self.schema(),
            filter: self.filter.clone(),
            probe_keys: self.on.iter().map(|(_, r)| r.clone()).collect(),
            bounds: self.bounds.clone(),
            projection: self.projection.clone(),
            left_columns: self.left.schema().fields().len(),
            batch_size: context.session_config().batch_size(),
            metrics: BaselineMetrics::new(&self.metrics, partition),
            candidates: MetricBuilder::new(&self.metrics).counter("candidate_pairs", partition),
        });
        let output = stream::once(async move {
            let build = build.await?;
            let joined = probe
                .map(move |batch| join.probe(&build, &batch?))
                .map_ok(|parts| stream::iter(parts.into_iter().map(Ok)))
                .try_flatten();
            Ok::<_, DataFusionError>(joined)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            output,
        )))
    }
}

impl IntervalJoinExec {
    /// This join over `left` and `right`, with nothing built or measured yet.
    fn fresh(&self, left: Arc<dyn ExecutionPlan>, right: Arc<dyn ExecutionPlan>) -> Self {
        IntervalJoinExec {
            left,
            right,
            on: self.on.clone(),
            filter: self.filter.clone(),
            bounds: self.bounds.clone(),
            collect_left: self.collect_left,
            projection: self.projection.clone(),
            properties: self.properties.clone(),
            distribution: self.distribution.clone(),
            build: Arc::default(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    fn build_keys(&self) -> Vec<PhysicalExprRef> {
        self.on.iter().map(|(l, _)| l.clone()).collect()
    }
}
