//! `export --critical-path`: the critical path of each step (the `critical_path` report,
//! over the whole window) as the table `critical_path_segment`, which the export plans draw
//! (`sql/export/chrome_critical_path*.sql`). Without the flag the table is empty, and the
//! export is what it always was.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::prelude::{cast, col, SessionContext};

use crate::window::Window;
use crate::Result;

/// The table the export plans read the path from.
const TABLE: &str = "critical_path_segment";

/// The report's columns the plans read, with their types; `draw_ts` and `draw_end` are the
/// segment as a slice of the path's track, where each follows the one before (an edge of
/// negative weight ends before it starts, and a slice must not overlap the next).
fn schema() -> SchemaRef {
    let int = |name| Field::new(name, DataType::Int64, true);
    let text = |name| Field::new(name, DataType::Utf8, true);
    Arc::new(Schema::new(vec![
        int("step"),
        text("step_name"),
        int("position"),
        text("type"),
        text("bound_by"),
        text("name"),
        int("pid"),
        int("tid"),
        int("device_id"),
        int("stream_id"),
        int("ts"),
        int("end_ts"),
        int("dur_ns"),
        int("draw_ts"),
        int("draw_end"),
    ]))
}

/// Register `critical_path_segment` in `ctx`: the path of `window` under the report's
/// parameters `params` (NAME, VALUE), or no rows when None.
pub(crate) async fn register(
    ctx: &SessionContext,
    window: &Window,
    params: Option<&[(String, String)]>,
) -> Result<()> {
    let batches = match params {
        Some(values) => segments(window, values).await?,
        None => Vec::new(),
    };
    let table = MemTable::try_new(schema(), vec![batches])?;
    ctx.register_table(TABLE, Arc::new(table))?;
    Ok(())
}

/// The report's rows, in a query session of their own over the window (the export's session
/// lacks the report helpers and the engine functions the path needs).
async fn segments(window: &Window, values: &[(String, String)]) -> Result<Vec<RecordBatch>> {
    let ctx = crate::catalog::open(window).await?;
    let report = crate::report::find("critical_path")?;
    let partitions = &window.partition_keys;
    crate::report::register_helpers_for(&ctx, partitions, std::slice::from_ref(&report), true)
        .await?;
    let rows = crate::query::plan_script(&ctx, &report.sql(partitions, values)?).await?;
    ctx.register_table("_critical_path_row", rows.into_view())?;
    let drawn = ctx.sql(DRAWN).await?;
    let columns = (schema().fields().iter())
        .map(|f| cast(col(f.name()), f.data_type().clone()).alias(f.name()))
        .collect::<Vec<_>>();
    // Sorted last: a projection above the sort was dealt round-robin to the cores and
    // gathered back in any order (the steps of a 1 M-event path came out interleaved).
    let in_path_order = vec![
        col("step").sort(true, false),
        col("position").sort(true, false),
    ];
    let rows = drawn.select(columns)?.sort(in_path_order)?;
    crate::profile::explain(TABLE, async || Ok(rows.clone())).await?;
    Ok(rows.collect().await?)
}

/// The report's rows with their slices' times: each starts at the latest start so far on
/// its path, and ends there or later, but not after the next one starts.
const DRAWN: &str = "
WITH started AS (
  SELECT *, MAX(ts) OVER (PARTITION BY step ORDER BY position
    ROWS UNBOUNDED PRECEDING) AS draw_ts
  FROM _critical_path_row
)
SELECT *, greatest(draw_ts, least(end_ts,
    COALESCE(LEAD(draw_ts) OVER (PARTITION BY step ORDER BY position), end_ts))) AS draw_end
FROM started";
