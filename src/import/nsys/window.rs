//! Stage `window`, nsys side: one process's mapped rows -> the Parquet tables of a window
//! (through the window writer) and its `window_info`. Columns are matched to the canonical
//! spec by name; a required column the mapping has no source for is written as NULL, an
//! optional one is left out.

use std::path::Path;

use datafusion::arrow::array::{new_null_array, ArrayRef};
use datafusion::arrow::compute::cast;
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Error;
use crate::schema::{table_spec, SCHEMA_VERSION};
use crate::window::writer::{Table, V};
use crate::Result;

/// Write `batches` (one process's rows of one mapping) as the window table `table` in
/// `dir`; returns the row count (no file for 0). Columns go over whole, cast to their file
/// types: a required column the mapping lacks is written as nulls, an optional one is left
/// out.
pub fn write_table(
    dir: &Path,
    table: &'static str,
    window_id: i64,
    batches: &[RecordBatch],
) -> Result<u64> {
    let spec = table_spec(table).ok_or_else(|| Error::Internal(format!("no table {table}")))?;
    let Some(first) = batches.first() else {
        return Ok(0);
    };
    let schema = first.schema();
    for field in schema.fields() {
        if !spec.columns.iter().any(|c| c.name == field.name()) {
            return Err(Error::Internal(format!(
                "nsys mapping of {table}: column {} is not in the window format",
                field.name()
            )));
        }
    }
    let skip: Vec<&str> = spec
        .columns
        .iter()
        .filter(|c| !c.required && schema.index_of(c.name).is_err())
        .map(|c| c.name)
        .collect();
    let mut t = Table::new(dir, table, window_id, &skip, &[]);
    let file_schema = t.schema().clone();
    for batch in batches {
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(file_schema.fields().len());
        for field in file_schema.fields() {
            arrays.push(match batch.schema().index_of(field.name()) {
                Ok(at) => cast(batch.column(at), field.data_type())?,
                Err(_) => new_null_array(field.data_type(), batch.num_rows()),
            });
        }
        t.push_columns(arrays)?;
    }
    t.finish()
}

/// What `window_info` records about an imported report.
pub struct Info<'a> {
    pub window_id: i64,
    pub start_ns: i64,
    pub base_ns: i64,
    pub cbid_table_version: &'a str,
}

pub fn write_window_info(dir: &Path, info: &Info<'_>) -> Result<u64> {
    let mut t = Table::new(dir, "window_info", info.window_id, &["cupti_version"], &[]);
    t.push(&[
        V::I(info.window_id),
        V::I(info.start_ns),
        V::N,
        V::I(info.base_ns),
        V::S(SCHEMA_VERSION),
        V::S("tracesql import nsys"),
        V::N,
        V::S(info.cbid_table_version),
    ]);
    t.finish()
}
