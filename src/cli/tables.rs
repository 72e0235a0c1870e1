//! `tracesql tables`: list the tables and views of a window with row counts and columns.

use std::path::PathBuf;

use clap::Args;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::Int64Type;

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
    let listing = ctx
        .sql(
            "SELECT table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'public' ORDER BY table_type, table_name",
        )
        .await?
        .collect()
        .await?;
    for batch in listing {
        let names = text_values(batch.column(0))?;
        let kinds = text_values(batch.column(1))?;
        for (name, kind) in names.iter().zip(&kinds) {
            let size = if kind == "VIEW" {
                "view".to_string()
            } else {
                let counted = ctx
                    .sql(&format!("SELECT count(*) FROM \"{name}\""))
                    .await?
                    .collect()
                    .await?;
                let n = counted
                    .first()
                    .map(|b| b.column(0).as_primitive::<Int64Type>().value(0))
                    .unwrap_or(0);
                format!("{n} rows")
            };
            println!("{name:<24} {size}");
            if args.schema {
                let table = ctx.table(name.as_str()).await?;
                for field in table.schema().fields() {
                    println!("    {:<52} {}", field.name(), field.data_type());
                }
            }
        }
    }
    Ok(())
}

fn text_values(column: &ArrayRef) -> anyhow::Result<Vec<String>> {
    let text = cast(column, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    Ok((0..text.len()).map(|i| text.value(i).to_string()).collect())
}
