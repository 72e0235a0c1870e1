//! The export's DataFusion session, set up once in its final form before any plan runs: the
//! engine's export settings ([`crate::engine::export_session`]), the window's tables as the
//! row filter leaves them, the public views, what the plans read besides the catalog, then
//! the plans of `sql/export/` (the held ones as held tables). Nothing is swapped, re-created
//! or SET while the export runs; the two things only the export learns as it goes (the
//! lanes' hardware-queue iids, the profiler span) are given once, to tables and functions
//! registered for them.

use std::sync::Arc;

use datafusion::arrow::array::{Float64Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::{MemTable, ViewTable};
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::optimizer::Analyzer;
use datafusion::prelude::{col, SessionContext};

use super::filter::{self, RowFilter};
use super::manifest;
use super::shared_rows::{self, HeldRows};
use super::udf;
use crate::catalog::file_order::FILE_ROW;
use crate::engine::{ExportTuning, RowLookup};
use crate::error::Error;
use crate::sink::chrome::Span;
use crate::sql::EXPORT;
use crate::window::Window;
use crate::Result;

/// The session one export runs in.
pub(crate) struct ExportSession {
    pub ctx: SessionContext,
    /// `pftrace_hw_queue(lane)`: given once `pftrace_lane` is computed
    hw_queues: RowLookup,
    /// `chrome_span_bound`: given once every other Chrome event is written
    span_bound: Arc<HeldRows>,
}

/// The CPU trace's clock, as the plans read it from `chrome_base`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceBase {
    pub base_ns: i64,
    pub cpu_base_ns: i64,
}

impl ExportSession {
    /// The session over `window` as `filter` narrows it; `cpu_events` are its `cpu_event`
    /// rows, parsed from the CPU trace the export has read already.
    pub async fn open(
        window: &Window,
        cpu_events: Vec<RecordBatch>,
        filter: &RowFilter,
        base: TraceBase,
    ) -> Result<Self> {
        let tuning = ExportTuning {
            filtered: filter.is_active(),
        };
        let ctx = crate::engine::export_session(tuning);
        filter::register_catalog(&ctx, window, cpu_events, filter).await?;
        let path = filter.critical_path.as_deref();
        super::critical_path::register(&ctx, window, path).await?;
        let session = register_plans(ctx, base).await?;
        filter::pair_launch_flows(&session.ctx, filter).await?;
        Ok(session)
    }

    /// Give `pftrace_hw_queue` the lanes' iids (lane -> `pftrace_lane.iid`).
    pub fn give_hw_queues(&self, iids: std::collections::HashMap<Option<i64>, i64>) {
        self.hw_queues.give(iids);
    }

    /// Give `chrome_trace_span` its extent.
    pub async fn give_span(&self, span: Span) -> Result<()> {
        let batch = RecordBatch::try_new(
            span_bound_schema(),
            vec![
                Arc::new(Float64Array::from(vec![span.min_ts])),
                Arc::new(Float64Array::from(vec![span.max_end])),
            ],
        )?;
        self.span_bound.give(vec![batch]).await
    }

    /// Free the `cpu_event` table once `_chrome_cpu_thread`, its last reader among the plans,
    /// is held (call after `chrome_cpu_event` has run). A `--sql` script's views may read it
    /// later, so it stays then.
    pub async fn release_cpu_events(&self, filter: &RowFilter) -> Result<()> {
        if filter.script.is_none() {
            shared_rows::keep_then_release(&self.ctx, "_chrome_cpu_thread", "cpu_event").await?;
        }
        Ok(())
    }
}

/// The export's session over all of `window`, its plans registered against a CPU-trace clock
/// at 0, for the tests that run the plans themselves.
pub async fn plan_session(window: &Window) -> Result<SessionContext> {
    let ctx = crate::engine::export_session(ExportTuning { filtered: false });
    crate::catalog::register_window(&ctx, window).await?;
    crate::catalog::file_order::number_window_tables(&ctx).await?;
    crate::sql::register_views_in_file_order(&ctx, &window.partition_keys).await?;
    super::critical_path::register(&ctx, window, None).await?;
    let base = TraceBase {
        base_ns: 0,
        cpu_base_ns: 0,
    };
    Ok(register_plans(ctx, base).await?.ctx)
}

/// Register what the export plans read besides the catalog (`chrome_base`, the
/// `chrome_pm_sample` unpivot, the export functions, `chrome_span_bound`), then the plans of
/// `sql/export/`, in `ctx`, its tables and views registered.
async fn register_plans(ctx: SessionContext, base: TraceBase) -> Result<ExportSession> {
    for udf in udf::export_udfs() {
        ctx.register_udf(udf);
    }
    let hw_queues = RowLookup::new("pftrace_hw_queue");
    ctx.register_udf(hw_queues.udf());
    let schema = Arc::new(Schema::new(vec![
        Field::new("base_ns", DataType::Int64, false),
        Field::new("cpu_base_ns", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(vec![base.base_ns])),
            Arc::new(Int64Array::from(vec![base.cpu_base_ns])),
        ],
    )?;
    ctx.register_table(
        "chrome_base",
        Arc::new(MemTable::try_new(schema, vec![vec![batch]])?),
    )?;
    let span_bound = Arc::new(HeldRows::later(SPAN_BOUND, span_bound_schema()));
    ctx.register_table(SPAN_BOUND, span_bound.clone())?;
    ctx.sql(&pm_sample_view(&ctx).await?).await?;
    for object in EXPORT {
        let failed = |e: datafusion::error::DataFusionError| {
            Error::Internal(format!("sql/{}: {}", object.path, Error::from(e)))
        };
        match manifest::held(object.name) {
            None => drop(ctx.sql(object.text).await.map_err(failed)?),
            Some(plan) => {
                // Read as its view would be (types coerced as CREATE VIEW does), never
                // registered as one.
                let defined = ctx.sql(object.query()?).await.map_err(failed)?;
                let coerced = Analyzer::with_rules(vec![Arc::new(TypeCoercion::new())])
                    .execute_and_check(
                        defined.into_unoptimized_plan(),
                        &Default::default(),
                        |_, _| {},
                    )?;
                let view = ViewTable::new(coerced, None);
                let query = ctx.read_table(Arc::new(view))?;
                let sorted = (plan.sorted.iter())
                    .map(|columns| columns.iter().map(|c| col(*c).sort(true, false)).collect())
                    .collect();
                let held = HeldRows::computed(object.name, query, sorted)?;
                ctx.register_table(object.name, Arc::new(held))?;
            }
        }
    }
    Ok(ExportSession {
        ctx,
        hw_queues,
        span_bound,
    })
}

/// The table `chrome_trace_span` reads its extent from.
const SPAN_BOUND: &str = "chrome_span_bound";

fn span_bound_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("min_ts", DataType::Float64, false),
        Field::new("max_end", DataType::Float64, false),
    ]))
}

/// `chrome_pm_sample`: pm_sampling's metric columns (every column but start_ns, device_id
/// and file_row, in file order: `metric_index`) unpivoted to one row per sample and metric
/// (`ord`: the row's place in the file).
async fn pm_sample_view(ctx: &SessionContext) -> Result<String> {
    let schema = ctx.table("pm_sampling").await?.schema().as_arrow().clone();
    let selects: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| f.name())
        .filter(|n| !["start_ns", "device_id", FILE_ROW].contains(&n.as_str()))
        .enumerate()
        .map(|(index, metric)| {
            format!(
                "SELECT device_id, start_ns, '{}' AS metric, CAST(\"{}\" AS DOUBLE) AS value, \
                 {index} AS metric_index, {FILE_ROW} AS ord \
                 FROM pm_sampling",
                metric.replace('\'', "''"),
                metric.replace('"', "\"\"")
            )
        })
        .collect();
    let body = if selects.is_empty() {
        "SELECT CAST(NULL AS BIGINT) AS device_id, CAST(NULL AS BIGINT) AS start_ns, \
         CAST(NULL AS VARCHAR) AS metric, CAST(NULL AS DOUBLE) AS value, \
         0 AS metric_index, CAST(0 AS BIGINT) AS ord WHERE false"
            .to_string()
    } else {
        selects.join(" UNION ALL ")
    };
    Ok(format!("CREATE OR REPLACE VIEW chrome_pm_sample AS {body}"))
}
