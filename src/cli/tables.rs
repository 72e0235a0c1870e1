//! `tracesql tables`: list the tables of a window with row counts, then the views.

use std::path::PathBuf;

use clap::Args;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::SessionContext;

/// List the tables of a window (row counts) and the views; --schema adds columns.
///
/// Example:
///   tracesql tables --window ./window_id=000001 --schema
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct TablesArgs {
    /// A window directory or an archive (default: the built-in demo)
    #[arg(short, long, value_name = "PATH")]
    window: Option<PathBuf>,
    /// Also list each table's columns and types
    #[arg(long)]
    schema: bool,
}

pub async fn run(args: TablesArgs) -> anyhow::Result<()> {
    let (_window, ctx) = super::open_catalog(args.window.as_deref()).await?;
    let tables =
        tracesql::schema::TABLES
            .iter()
            .map(|t| t.name)
            .chain(["cpu_event", "cpu_trace", "cbid"]);
    for name in tables {
        let n = count_rows(&ctx, name).await?;
        println!("{name:<24} {n} rows");
        print_columns(&ctx, name, args.schema).await?;
    }
    for view in tracesql::sql::VIEWS {
        println!("{:<24} view", view.name);
        print_columns(&ctx, view.name, args.schema).await?;
    }
    Ok(())
}

async fn count_rows(ctx: &SessionContext, name: &str) -> anyhow::Result<i64> {
    let batches = ctx
        .sql(&format!("SELECT count(*) FROM {name}"))
        .await?
        .collect()
        .await?;
    Ok(batches
        .first()
        .map(|b| b.column(0).as_primitive::<Int64Type>().value(0))
        .unwrap_or(0))
}

async fn print_columns(ctx: &SessionContext, name: &str, enabled: bool) -> anyhow::Result<()> {
    if enabled {
        let table = ctx.table(name).await?;
        for field in table.schema().fields() {
            println!("    {:<52} {}", field.name(), field.data_type());
        }
    }
    Ok(())
}
