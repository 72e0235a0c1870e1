//! Stage `query`: run SQL text against a catalog and stream the last statement's batches
//! into a sink. A script may hold several statements (`CREATE VIEW ...; SELECT ...`); each
//! runs in order and the result of the last one is the answer.

use std::io::Write;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::{DataFrame, SessionContext};
use datafusion::sql::parser::DFParser;
use futures::StreamExt;

use crate::error::Error;
use crate::sink::{Fit, OutputFormat, ResultWriter};
use crate::Result;

/// Run every statement of `sql`; return the stream of the last one.
pub async fn run_script(ctx: &SessionContext, sql: &str) -> Result<SendableRecordBatchStream> {
    Ok(plan_script(ctx, sql).await?.execute_stream().await?)
}

/// Run every statement of `sql` but the last; return the last one planned, not run.
pub async fn plan_script(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let statements = DFParser::parse_sql(sql)?;
    if statements.is_empty() {
        return Err(Error::Usage("no SQL statement given".into()));
    }
    let mut statements = statements.into_iter().peekable();
    while let Some(statement) = statements.next() {
        // `--profile`: each statement of a script (a report's steps) with its time
        let mut clock = crate::profile::Clock::start();
        let text = statement.to_string();
        // `--explain NAME`: EXPLAIN ANALYZE of the query of `CREATE ... TABLE NAME AS query`
        let created = text
            .split_once(" AS ")
            .filter(|(head, _)| head.starts_with("CREATE "));
        if let Some((head, query)) = created {
            let name = head.rsplit(' ').next().unwrap_or(head);
            crate::profile::explain(name, async || Ok(ctx.sql(query).await?)).await?;
        }
        let label = crate::profile::enabled().then(|| statement_label(&text));
        // Plan each statement only after the previous one ran: it may create what this uses.
        let plan = ctx.state().statement_to_plan(statement).await?;
        let df = ctx.execute_logical_plan(plan).await?;
        if statements.peek().is_none() {
            return Ok(df);
        }
        df.collect().await?;
        if let Some(label) = label {
            clock.mark(&label);
        }
    }
    unreachable!("the loop returns on the last statement")
}

/// A statement's start, as a stage's name: `CREATE OR REPLACE TABLE _cp_path`.
fn statement_label(text: &str) -> String {
    let head = text.split(" AS ").next().unwrap_or(text);
    head.chars().take(60).collect()
}

/// Run `sql` and write its result to `out` in `format`; returns the number of rows.
pub async fn write_query<W: Write + Send>(
    ctx: &SessionContext,
    sql: &str,
    format: OutputFormat,
    out: W,
) -> Result<u64> {
    write_query_fitted(ctx, sql, format, Fit::default(), out).await
}

/// [`write_query`] whose table (or line) layout shows what `fit` allows.
pub async fn write_query_fitted<W: Write + Send>(
    ctx: &SessionContext,
    sql: &str,
    format: OutputFormat,
    fit: Fit,
    out: W,
) -> Result<u64> {
    let mut stream = run_script(ctx, sql).await?;
    let schema: SchemaRef = stream.schema();
    let mut writer = ResultWriter::try_new_fitted(out, schema, format, fit)?;
    let mut rows = 0u64;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        writer.write(&batch)?;
    }
    writer.finish()?;
    Ok(rows)
}
