//! A left join of two queries whose rows already come in the order of the join keys, as
//! DataFusion's sort-merge join put over the two planned sides. The SQL planner would
//! build a hash table on one whole side or sort the joined rows, as it cannot see that two
//! scans of different tables come in the same order.
//!
//! Used for the .pftrace render stages: the held narrow rows (`pftrace_render`) and the
//! columns only written out (`_pftrace_render_extra`, read again at write time), both in
//! (stage_iid, ord) order: 10 M .pftrace peak 3.34 -> 2.73 GB against holding the extras
//! with the narrow rows (a3592aa).

use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::common::NullEquality;
use datafusion::logical_expr::JoinType;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExprRef;
use datafusion::physical_plan::joins::SortMergeJoinExec;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::SessionContext;

use crate::Result;

/// The rows of `left` (a query), each with the columns of its row in `right` on `keys`
/// (NULLs where it has none), in `left`'s order; both must come ascending in `keys`. Also
/// returns how many columns `left` has (the right's come after them).
pub async fn left_merge_join(
    ctx: &SessionContext,
    left: &str,
    right: &str,
    keys: &[&str],
) -> Result<(SendableRecordBatchStream, usize)> {
    let side = async |query: &str| -> Result<Arc<dyn ExecutionPlan>> {
        Ok(ctx.sql(query).await?.create_physical_plan().await?)
    };
    let (left, right) = (side(left).await?, side(right).await?);
    let key = |plan: &Arc<dyn ExecutionPlan>, name: &str| -> Result<PhysicalExprRef> {
        Ok(Arc::new(Column::new_with_schema(name, &plan.schema())?))
    };
    let on = (keys.iter())
        .map(|k| Ok((key(&left, k)?, key(&right, k)?)))
        .collect::<Result<Vec<_>>>()?;
    let left_width = left.schema().fields().len();
    let join = SortMergeJoinExec::try_new(
        left,
        right,
        on,
        None,
        JoinType::Left,
        vec![SortOptions::new(false, false); keys.len()],
        NullEquality::NullEqualsNothing,
    )?;
    Ok((join.execute(0, ctx.task_ctx())?, left_width))
}
