//! Stage `register`: a report's tables -> a DataFusion SessionContext under nsys's own names
//! (case kept: identifiers are not lowercased), with tracesql's `cbid` table and the views of
//! sql/import/nsys/ on top. Loaded tables are in-memory tables of one partition in row
//! order; streamed ones are `feed` tables. Every plan runs on one partition, so a mapping's
//! rows come out in its table's row order (no repartitioning) and need no sort when the
//! report is in time order.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::feed::FeedTable;
use super::load::Report;
use crate::error::Error;
use crate::Result;

/// A report's context and its streamed tables (what `feed::pump` starts readers for).
pub struct Registered {
    pub ctx: SessionContext,
    pub feeds: Vec<Arc<FeedTable>>,
}

/// A context holding `report`'s tables and the nsys views.
pub async fn context(report: &Report) -> Result<Registered> {
    let ctx = crate::engine::import_session();
    // one partition: no round-robin repartitioning, which would interleave a table's rows
    ctx.sql("SET datafusion.execution.target_partitions = 1")
        .await?
        .collect()
        .await?;
    for (name, batches) in &report.tables {
        register(&ctx, name, batches[0].schema(), vec![batches.clone()])?;
    }
    let mut feeds = Vec::new();
    for (name, table) in &report.streamed {
        let feed = Arc::new(FeedTable::new(table.clone()));
        ctx.register_table(
            datafusion::common::TableReference::bare(*name),
            feed.clone(),
        )
        .map_err(|e| Error::Internal(format!("{name}: {e}")))?;
        feeds.push(feed);
    }
    let cbid = cbid_batch()?;
    register(&ctx, "cbid", cbid.schema(), vec![vec![cbid]])?;
    for object in crate::sql::IMPORT_NSYS {
        ctx.sql(object.text)
            .await
            .map_err(|e| Error::Internal(format!("sql/{}: {}", object.path, Error::from(e))))?;
        if MATERIALIZED.contains(&object.name) {
            materialize(&ctx, object.name).await?;
        }
    }
    Ok(Registered { ctx, feeds })
}

/// Views computed once and replaced by their rows before the views that read them are
/// created: every mapping reads them, and planning them into each mapping again doubled the
/// import's time (a one-kernel report in the dev build: 1.6 s -> 0.8 s, mapping 1.37 -> 0.49 s).
/// `_nsys_api` is no longer among them: it is a row per API call, streamed.
const MATERIALIZED: &[&str] = &["nsys_session", "_nsys_enum"];

async fn materialize(ctx: &SessionContext, name: &str) -> Result<()> {
    let frame = ctx
        .table(datafusion::common::TableReference::bare(name))
        .await?;
    let schema = frame.schema().inner().clone();
    let parts = frame.collect_partitioned().await?;
    ctx.deregister_table(datafusion::common::TableReference::bare(name))?;
    register(ctx, name, schema, parts)
}

fn register(
    ctx: &SessionContext,
    name: &str,
    schema: datafusion::arrow::datatypes::SchemaRef,
    parts: Vec<Vec<RecordBatch>>,
) -> Result<()> {
    let table =
        MemTable::try_new(schema, parts).map_err(|e| Error::Internal(format!("{name}: {e}")))?;
    ctx.register_table(
        datafusion::common::TableReference::bare(name),
        Arc::new(table),
    )
    .map_err(|e| Error::Internal(format!("{name}: {e}")))?;
    Ok(())
}

/// The compiled-in callback-id table: (domain, cbid, raw_name, name).
fn cbid_batch() -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("domain", DataType::Utf8, false),
        Field::new("cbid", DataType::Int64, false),
        Field::new("raw_name", DataType::Utf8, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let (mut domain, mut cbid, mut raw, mut name) = (
        StringBuilder::new(),
        Int64Builder::new(),
        StringBuilder::new(),
        StringBuilder::new(),
    );
    for (d, c, r, n) in crate::catalog::cbid_rows() {
        domain.append_value(d);
        cbid.append_value(c);
        raw.append_value(r);
        name.append_value(n);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(domain.finish()),
        Arc::new(cbid.finish()),
        Arc::new(raw.finish()),
        Arc::new(name.finish()),
    ];
    Ok(RecordBatch::try_new(schema, columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::nsys::load::schema_of;
    use crate::import::nsys::source::SOURCES;
    use std::collections::BTreeMap;

    /// Every view of sql/import/nsys/ plans and runs against empty source tables.
    #[tokio::test]
    async fn every_nsys_view_runs_on_an_empty_report() {
        let tables: BTreeMap<&'static str, Vec<RecordBatch>> = SOURCES
            .iter()
            .map(|s| (s.name, vec![RecordBatch::new_empty(schema_of(s))]))
            .collect();
        let report = Report {
            path: "empty.sqlite".into(),
            tables,
            streamed: BTreeMap::new(),
            absent: vec![],
        };
        let ctx = context(&report).await.unwrap().ctx;
        for object in crate::sql::IMPORT_NSYS {
            let want = if object.name == "nsys_session" { 1 } else { 0 };
            let batches = ctx
                .sql(&format!("SELECT * FROM {}", object.name))
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            assert_eq!(rows, want, "{}", object.path);
        }
    }
}
