//! Stage `catalog`: register a checked [`Window`] in a DataFusion `SessionContext`: one table
//! per kind and side table (absent ones as empty tables of the canonical schema),
//! `cpu_event` and `cpu_trace` (the CPU traces), `cbid`, `row_order` (which files claim
//! their rows in time order per stream), then the views of `sql/views/`. Views and `cbid`
//! are built when a query first names them ([`lazy`]).
//!
//! In: a [`Window`]. Out: a `SessionContext` ready for SQL.

mod cbid;
mod cpu_event;
pub mod cpu_trace;
pub mod file_order;
pub mod lazy;
mod row_order;
mod trace_doc;

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::datasource::empty::EmptyTable;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::prelude::SessionContext;

pub use cbid::{cbid_rows, CBID_TABLE_VERSION};
pub use cpu_event::{CpuEventTable, CpuTraceSource, CpuTraceTable, CpuTraceWindow};

use crate::error::Error;
use crate::schema::TABLES;
use crate::window::Window;
use crate::Result;

/// A new context with every table of `window` and every view registered.
pub async fn open(window: &Window) -> Result<SessionContext> {
    let ctx = crate::engine::query_session();
    lazy::install(&ctx)?;
    register_window(&ctx, window).await?;
    crate::sql::register_views(&ctx, &window.partition_keys).await?;
    lazy::seal(&ctx);
    Ok(ctx)
}

/// Register the tables of `window` (not the views) in `ctx`.
pub async fn register_window(ctx: &SessionContext, window: &Window) -> Result<()> {
    let partition_fields = partition_fields(window);
    for spec in TABLES {
        match window.table(spec.name) {
            Some(source) if window.is_archive() => {
                register_archive_table(
                    ctx,
                    window,
                    spec.name,
                    source.schema.clone(),
                    &partition_fields,
                )
                .await?
            }
            Some(source) => {
                let table = listing_table(window, spec.name, source.schema.clone(), &[])?;
                ctx.register_table(spec.name, Arc::new(table))?;
            }
            None => {
                let schema = with_fields(spec.table_schema(), &partition_fields);
                ctx.register_table(spec.name, Arc::new(EmptyTable::new(schema)))?;
            }
        }
    }
    let mut sources = Vec::new();
    let mut traces = Vec::with_capacity(window.windows.len());
    let mut values_of_windows = Vec::with_capacity(window.windows.len());
    for w in &window.windows {
        let partition_values = w
            .partitions
            .iter()
            .zip(&partition_fields)
            .map(|((_, value), field)| partition_value(value, field.data_type()))
            .collect::<Result<Vec<_>>>()?;
        values_of_windows.push(partition_values.clone());
        let source = w.cpu_trace.clone().map(|path| {
            sources.push(CpuTraceSource {
                path,
                partition_values: partition_values.clone(),
            });
            sources.len() - 1
        });
        traces.push(CpuTraceWindow {
            dir: w.path.clone(),
            source,
            partition_values,
        });
    }
    let events = Arc::new(CpuEventTable::new(sources, &partition_fields));
    ctx.register_table("cpu_event", events.clone())?;
    ctx.register_table(
        "cpu_trace",
        Arc::new(CpuTraceTable::new(events, traces, &partition_fields)),
    )?;
    lazy::register_table(ctx, "cbid", || Ok(Arc::new(cbid::cbid_table()?)))?;
    let order = row_order::row_order_table(window, &partition_fields, &values_of_windows)?;
    ctx.register_table("row_order", Arc::new(order))?;
    row_order::tell_the_engine(ctx, window)
}

/// An archive table: a listing table `_raw_<name>` over every window's `<name>.parquet`
/// whose partition columns are read as text, and the public `<name>`, a view that types them
/// and leaves out windows still being written (`window_id=N.tmp`). Predicates on the partition columns still prune whole windows through the view.
async fn register_archive_table(
    ctx: &SessionContext,
    window: &Window,
    name: &str,
    schema: SchemaRef,
    partition_fields: &[Field],
) -> Result<()> {
    let raw_name = format!("_raw_{name}");
    // DataFusion matches partition columns to folder keys by name, so a stored column with a
    // key's name (window_info.window_id) gives way to the folder's value, which is the same.
    let is_key = |name: &str| partition_fields.iter().any(|f| f.name() == name);
    let stored: Vec<Field> = schema
        .fields()
        .iter()
        .filter(|f| !is_key(f.name()))
        .map(|f| f.as_ref().clone())
        .collect();
    let as_text: Vec<Field> = partition_fields
        .iter()
        .map(|f| Field::new(f.name(), DataType::Utf8, false))
        .collect();
    let table = listing_table(
        window,
        name,
        Arc::new(Schema::new(stored.clone())),
        &as_text,
    )?;
    ctx.register_table(raw_name.as_str(), Arc::new(table))?;
    let mut select: Vec<String> = stored.iter().map(|f| quote_ident(f.name())).collect();
    for field in partition_fields {
        let column = quote_ident(field.name());
        select.push(match field.data_type() {
            DataType::Int64 => format!("TRY_CAST({column} AS BIGINT) AS {column}"),
            _ => column,
        });
    }
    let query = format!(
        "SELECT {} FROM {raw_name} WHERE {} NOT LIKE '%.tmp'",
        select.join(", "),
        quote_ident(crate::window::WINDOW_KEY),
    );
    let statement = format!("CREATE VIEW {name} AS {query}");
    lazy::create_view(ctx, name, &query, &statement, "the archive's view").await
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A Parquet listing table: the one file of a window, or `<kind>.parquet` of every window
/// of an archive with the partition folders as columns (so predicates on them prune files).
fn listing_table(
    window: &Window,
    name: &str,
    schema: SchemaRef,
    partition_fields: &[Field],
) -> Result<ListingTable> {
    let format = Arc::new(ParquetFormat::default());
    let (url, options) = if !partition_fields.is_empty() {
        let root = format!("{}/", absolute(&window.root)?.display());
        let options = ListingOptions::new(format)
            .with_file_extension(format!("/{name}.parquet"))
            .with_table_partition_cols(
                partition_fields
                    .iter()
                    .map(|f| (f.name().clone(), f.data_type().clone()))
                    .collect(),
            );
        (root, options)
    } else {
        let file = absolute(&window.windows[0].path)?.join(format!("{name}.parquet"));
        let options = ListingOptions::new(format).with_file_extension(".parquet");
        (file.display().to_string(), options)
    };
    let url = ListingTableUrl::parse(&url)?;
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    Ok(ListingTable::try_new(config)?)
}

fn absolute(path: &std::path::Path) -> Result<std::path::PathBuf> {
    std::path::absolute(path).map_err(|e| Error::io(path, e))
}

/// Archive partition columns: `window_id` and integer-valued keys as Int64, others as text.
fn partition_fields(window: &Window) -> Vec<Field> {
    window
        .partition_keys
        .iter()
        .enumerate()
        .map(|(level, key)| {
            let all_int = window
                .windows
                .iter()
                .all(|w| w.partitions[level].1.parse::<i64>().is_ok());
            let ty = if all_int {
                DataType::Int64
            } else {
                DataType::Utf8
            };
            Field::new(key, ty, false)
        })
        .collect()
}

fn partition_value(text: &str, ty: &DataType) -> Result<ScalarValue> {
    Ok(ScalarValue::try_from_string(text.to_string(), ty)?)
}

fn with_fields(schema: SchemaRef, extra: &[Field]) -> SchemaRef {
    if extra.is_empty() {
        return schema;
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    for field in extra {
        if schema.field_with_name(field.name()).is_err() {
            fields.push(field.clone());
        }
    }
    Arc::new(Schema::new(fields))
}
