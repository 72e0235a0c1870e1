//! Narrowing a window before export: `--where` (a predicate over GPU ops and API calls) and
//! `--sql` (a script that redefines tables). docs/export-filter.md is the user's contract.
//!
//! Both work by replacing tables of the catalog with filtered views of themselves before the
//! views and export plans are planned on top, so every plan sees the same narrowed window:
//! metadata, counters, annotation spans and graph arrows follow what remains. Launch flows
//! are the one thing paired afterwards: a flow end whose other end the filter removed is
//! dropped too, while flows that had no partner in the window stay as the reference draws
//! them.

use std::path::PathBuf;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::error::Error;
use crate::window::Window;
use crate::Result;

/// What to keep of a window, and what to draw on it; the default keeps everything and
/// draws nothing more.
#[derive(Clone, Debug, Default)]
pub struct RowFilter {
    /// SQL predicate over the rows of GPU ops and API calls (see [`PREDICATE_COLUMNS`]).
    pub predicate: Option<String>,
    /// A SQL script (its path, for errors) run against the catalog before export.
    pub script: Option<PathBuf>,
    /// `--critical-path`: draw each step's critical path, found by the `critical_path`
    /// report with these parameters (NAME, VALUE) over the whole window.
    pub critical_path: Option<Vec<(String, String)>>,
}

impl RowFilter {
    pub fn is_active(&self) -> bool {
        self.predicate.is_some() || self.script.is_some()
    }
}

/// The columns a `--where` predicate can use, the same for every filtered table.
pub const PREDICATE_COLUMNS: &str = "kind, name, start_ns, end_ns, ts, dur, device_id, \
     stream_id, correlation_id, graph_id, graph_node_id, process_id, thread_id";

/// GPU-op tables and the name each row is known by (as the `gpu_op` view names them).
const GPU_TABLES: &[(&str, &str)] = &[
    ("kernel", "t.name"),
    ("gpu_memcpy", "'Memcpy'"),
    ("gpu_memset", "'Memset'"),
    ("graph_event_node", "'EventRecord'"),
    (
        "graph_host_node",
        "CASE WHEN t.host_fn IS NULL OR t.host_fn = '' THEN 'HostNode' \
         ELSE concat('HostNode: ', t.host_fn) END",
    ),
];

/// API-call tables and their cbid domain.
const API_TABLES: &[(&str, &str)] = &[("cuda_runtime", "runtime"), ("cuda_driver", "driver")];

/// The catalog of `window` narrowed by `filter`, registered in the export's session `ctx`:
/// tables, then views planned on what remains. `cpu_events` is the window's `cpu_event`
/// table, parsed from the CPU trace the export has read already (the catalog would read and
/// parse the file again).
pub(crate) async fn register_catalog(
    ctx: &SessionContext,
    window: &Window,
    cpu_events: Vec<RecordBatch>,
    filter: &RowFilter,
) -> Result<()> {
    crate::catalog::register_window(ctx, window).await?;
    crate::catalog::file_order::number_window_tables(ctx).await?;
    let schema = crate::catalog::cpu_trace::cpu_event_schema();
    let cpu_table = MemTable::try_new(schema, vec![cpu_events])?;
    ctx.deregister_table("cpu_event")?;
    ctx.register_table(
        "cpu_event",
        Arc::new(super::shared_rows::HeldRows::new("cpu_event", cpu_table)),
    )?;
    crate::sql::register_views_in_file_order(ctx, &window.partition_keys).await?;
    if !filter.is_active() {
        return Ok(());
    }
    run(ctx, &correlation_views("_all")).await?;
    if let Some(predicate) = &filter.predicate {
        apply_predicate(ctx, predicate).await?;
    }
    if let Some(path) = &filter.script {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        run(ctx, &text)
            .await
            .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
    }
    run(ctx, &correlation_views("_kept")).await?;
    // The views were planned on the unfiltered tables: plan them on what remains, before any
    // export plan is registered.
    crate::sql::register_views_in_file_order(ctx, &window.partition_keys).await
}

/// After the export plans are registered: drop each launch-flow end whose partner the
/// filter removed (an API call's `s` once every op that ended its flow is gone, a GPU op's
/// `f` once its launching call is gone).
pub(crate) async fn pair_launch_flows(ctx: &SessionContext, filter: &RowFilter) -> Result<()> {
    if filter.is_active() {
        run(ctx, PAIRED_FLOWS).await?;
    }
    Ok(())
}

const PAIRED_FLOWS: &str = "
CREATE OR REPLACE VIEW chrome_api_flow AS
SELECT * FROM chrome_api_flow f
WHERE f.id IN (SELECT correlation_id FROM _kept_flow_end_correlation)
   OR f.id NOT IN (SELECT correlation_id FROM _all_flow_end_correlation);
CREATE OR REPLACE VIEW chrome_gpu_flow AS
SELECT * FROM chrome_gpu_flow f
WHERE f.id IN (SELECT correlation_id FROM _kept_api_correlation)
   OR f.id NOT IN (SELECT correlation_id FROM _all_api_correlation);
";

/// Correlation ids of the tables as they stand now (a view keeps the tables it was planned
/// on): `<prefix>_gpu_correlation` of the GPU ops, `<prefix>_flow_end_correlation` of the
/// GPU ops that end a launch flow (as `chrome_gpu_flow` picks them: not a graph node with
/// recorded predecessors), `<prefix>_api_correlation` of the API calls.
fn correlation_views(prefix: &str) -> String {
    let union = |tables: &[(&str, &str)], cond: &str| {
        tables
            .iter()
            .map(|(t, _)| format!("SELECT correlation_id FROM {t} WHERE correlation_id <> 0{cond}"))
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    };
    let flow_end = " AND NOT EXISTS (SELECT 1 FROM graph_deps d WHERE d.node_id = graph_node_id)";
    format!(
        "CREATE OR REPLACE VIEW {prefix}_gpu_correlation AS {};\
         CREATE OR REPLACE VIEW {prefix}_flow_end_correlation AS {};\
         CREATE OR REPLACE VIEW {prefix}_api_correlation AS {};",
        union(GPU_TABLES, ""),
        union(GPU_TABLES, flow_end),
        union(API_TABLES, "")
    )
}

/// Replace every GPU-op and API-call table with the rows that pass `predicate`; an API call
/// also stays when a GPU op it launched stays, so kept ops keep their launches.
async fn apply_predicate(ctx: &SessionContext, predicate: &str) -> Result<()> {
    let usage = |e: Error| {
        // DataFusion lists the view's internal columns after this; the user's are below.
        let message = e.to_string();
        let message = message
            .split(". Valid fields are")
            .next()
            .unwrap_or_default();
        Error::Usage(format!(
            "--where {predicate:?}: {message} (the predicate can use: {PREDICATE_COLUMNS})"
        ))
    };
    check_predicate(predicate).map_err(usage)?;
    ctx.register_udf(api_name_udf());
    for (table, name) in GPU_TABLES {
        let shape = format!(
            "'{table}' AS kind, {name} AS name, t.start_ns AS start_ns, t.end_ns AS end_ns, \
             t.start_ns AS ts, t.end_ns - t.start_ns AS dur, t.device_id AS device_id, \
             t.stream_id AS stream_id, t.correlation_id AS correlation_id, \
             t.graph_id AS graph_id, t.graph_node_id AS graph_node_id, \
             CAST(NULL AS BIGINT) AS process_id, CAST(NULL AS BIGINT) AS thread_id"
        );
        let sql = filtered_view(ctx, table, &shape, &format!("({predicate})")).await?;
        run(ctx, &sql).await.map_err(usage)?;
    }
    run(ctx, &correlation_views("_kept")).await?;
    for (table, domain) in API_TABLES {
        let shape = format!(
            "'{table}' AS kind, \
             _filter_api_name('{domain}', t.cbid) AS name, \
             t.start_ns AS start_ns, t.end_ns AS end_ns, t.start_ns AS ts, \
             t.end_ns - t.start_ns AS dur, CAST(NULL AS BIGINT) AS device_id, \
             CAST(NULL AS BIGINT) AS stream_id, t.correlation_id AS correlation_id, \
             CAST(NULL AS BIGINT) AS graph_id, CAST(NULL AS BIGINT) AS graph_node_id, \
             t.process_id AS process_id, t.thread_id AS thread_id"
        );
        let keep = format!(
            "({predicate}) OR correlation_id IN \
             (SELECT correlation_id FROM _kept_gpu_correlation)"
        );
        let sql = filtered_view(ctx, table, &shape, &keep).await?;
        run(ctx, &sql).await.map_err(usage)?;
    }
    Ok(())
}

/// `_filter_api_name(domain, cbid)`: the API name as `api_call` gives it (the cbid table's,
/// else `cbid_<n>`), without the join to `cbid`, whose output order is the probe side's.
fn api_name_udf() -> ScalarUDF {
    static NAMES: OnceLock<HashMap<(&'static str, i64), &'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        crate::catalog::cbid_rows()
            .map(|(domain, cbid, _, name)| ((domain, cbid), name))
            .collect()
    });
    create_udf(
        "_filter_api_name",
        vec![DataType::Utf8, DataType::Int64],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let (domains, cbids) = (
                arrays[0].as_string::<i32>(),
                arrays[1].as_primitive::<Int64Type>(),
            );
            let mut out = StringBuilder::new();
            for row in 0..cbids.len() {
                if cbids.is_null(row) || domains.is_null(row) {
                    out.append_null();
                    continue;
                }
                let cbid = cbids.value(row);
                match names.get(&(domains.value(row), cbid)) {
                    Some(name) => out.append_value(name),
                    None => out.append_value(format!("cbid_{cbid}")),
                }
            }
            Ok(ColumnarValue::Array(Arc::new(out.finish())))
        }),
    )
}

/// Parse `predicate` on its own, so a syntax error points into the user's text rather than
/// into the view it is spliced into, and text after the expression is refused.
fn check_predicate(predicate: &str) -> Result<()> {
    use datafusion::sql::sqlparser::{dialect::GenericDialect, parser::Parser, tokenizer::Token};
    let sql_error = |e: datafusion::sql::sqlparser::parser::ParserError| Error::Sql(e.to_string());
    let mut parser = Parser::new(&GenericDialect {})
        .try_with_sql(predicate)
        .map_err(sql_error)?;
    parser.parse_expr().map_err(sql_error)?;
    match parser.peek_token().token {
        Token::EOF => Ok(()),
        token => Err(Error::Sql(format!(
            "unexpected `{token}` after the predicate"
        ))),
    }
}

/// `CREATE OR REPLACE VIEW <table>` as the table's own rows (all its columns, in order) for
/// which `keep` holds, `keep` seeing the common `shape` columns rather than the table's.
/// The rows keep their file order (the plans number them): no join but the semi-join of
/// `keep`, which emits its rows in input order.
async fn filtered_view(
    ctx: &SessionContext,
    table: &str,
    shape: &str,
    keep: &str,
) -> Result<String> {
    let schema: Schema = ctx.table(table).await?.schema().as_arrow().clone();
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let inner: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("t.{} AS __c{i}", quote(c)))
        .collect();
    let outer: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("__c{i} AS {}", quote(c)))
        .collect();
    Ok(format!(
        "CREATE OR REPLACE VIEW {table} AS SELECT {} FROM (SELECT {}, {shape} FROM {table} t) \
         WHERE {keep}",
        outer.join(", "),
        inner.join(", ")
    ))
}

/// Run a script statement by statement (each planned after the previous one ran); the rows
/// of a query are discarded.
async fn run(ctx: &SessionContext, sql: &str) -> Result<()> {
    let mut stream = crate::query::run_script(ctx, sql).await?;
    while let Some(batch) = stream.next().await {
        batch?;
    }
    Ok(())
}
