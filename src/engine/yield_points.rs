//! Engine: a yield point after every operator, so a cancelled query stops. In: a physical
//! plan. Out: the same plan with each operator that has inputs wrapped in DataFusion's
//! [`CooperativeExec`], whose stream spends a unit of the tokio task's budget per batch.
//!
//! DataFusion puts yield points only in the scans and exchanges; an operator that makes
//! many batches out of few (a nested-loop or cross join, a join that multiplies rows) and a
//! consumer that drains its input in a loop (an aggregate, a sort) can then keep one poll
//! running for seconds to minutes without returning to the runtime. Aborting the task (the
//! shell's Ctrl-C) takes effect only when the poll returns, so the cancelled work kept both
//! cores busy and the shell's next statement waited for a free worker.
//!
//! ```text
//!   AggregateExec                      AggregateExec
//!     NestedLoopJoinExec       ->        CooperativeExec   <- yields every 128 batches
//!       CrossJoinExec                      NestedLoopJoinExec
//!         scan a  scan b                     CooperativeExec
//!       scan c                                 CrossJoinExec ...
//! ```
//!
//! Measured: Ctrl-C on `select count(*) from kernel a, kernel b, kernel c where a.start_ns +
//! b.start_ns > c.end_ns` (6.5 k kernels, debug build) went on using both cores for 6.5 s
//! before; see [`YieldPoints`] for after. A batch costs one thread-local counter decrement.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};

/// Wraps every operator with inputs (not already under a [`CooperativeExec`]) in one.
#[derive(Debug)]
pub struct YieldPoints;

impl PhysicalOptimizerRule for YieldPoints {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // Each operator wraps its children (a CooperativeExec wraps nothing more), then the
        // root is wrapped: applied twice, the plan stays the same.
        let plan = plan
            .transform_up(|node| {
                let children = node.children();
                if is_yield_point(&node) || !children.iter().any(|c| needs_one(c)) {
                    return Ok(Transformed::no(node));
                }
                let children = children.into_iter().map(|c| wrapped(c.clone())).collect();
                // a yield point has its input's properties: the node's stay as they are
                let same = ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep);
                Ok(Transformed::yes(node.replace_children(children, same)?))
            })?
            .data;
        Ok(wrapped(plan))
    }

    fn name(&self) -> &str {
        "yield_points"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn is_yield_point(node: &Arc<dyn ExecutionPlan>) -> bool {
    node.downcast_ref::<CooperativeExec>().is_some()
}

/// An operator with inputs that is not a yield point itself.
fn needs_one(node: &Arc<dyn ExecutionPlan>) -> bool {
    !is_yield_point(node) && !node.children().is_empty()
}

fn wrapped(node: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    match needs_one(&node) {
        true => Arc::new(CooperativeExec::new(node)),
        false => node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::physical_plan::displayable;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn every_operator_with_inputs_gets_one_yield_point() {
        let ctx = SessionContext::new();
        let df = ctx
            .sql("select count(*) from (values (1), (2)) a(x), (values (3)) b(y) where x < y")
            .await
            .unwrap();
        let plan = df.create_physical_plan().await.unwrap();
        let plan = YieldPoints
            .optimize(plan, &ConfigOptions::default())
            .unwrap();
        let text = displayable(plan.as_ref()).indent(false).to_string();
        // (node, whether its parent is a CooperativeExec)
        let mut stack = vec![(plan.clone(), false)];
        let mut wrapped = 0;
        while let Some((node, under_coop)) = stack.pop() {
            if is_yield_point(&node) {
                assert!(!under_coop, "wrapped twice:\n{text}");
            } else if !node.children().is_empty() {
                assert!(under_coop, "{} has no yield point:\n{text}", node.name());
                wrapped += 1;
            }
            for child in node.children() {
                stack.push((child.clone(), is_yield_point(&node)));
            }
        }
        assert!(wrapped >= 2, "an aggregate and a join at least:\n{text}");
        // applied again, it adds nothing
        let again = YieldPoints
            .optimize(plan.clone(), &ConfigOptions::default())
            .unwrap();
        assert_eq!(displayable(again.as_ref()).indent(false).to_string(), text);
    }
}
