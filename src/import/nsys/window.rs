//! Stage `window`, nsys side: one process's mapped rows -> the Parquet tables of a window
//! (through the window writer) and its `window_info`. Columns are matched to the canonical
//! spec by name; a required column the mapping has no source for is written as NULL, an
//! optional one is left out.

use std::path::Path;

use datafusion::arrow::array::{Array, Int64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Error;
use crate::schema::{table_spec, ColType, SCHEMA_VERSION};
use crate::window::writer::{Table, V};
use crate::Result;

enum Column {
    Int(Int64Array),
    Text(StringArray),
    Absent,
}

impl Column {
    fn cell(&self, row: usize) -> V<'_> {
        match self {
            Column::Int(a) if a.is_valid(row) => V::I(a.value(row)),
            Column::Text(a) if a.is_valid(row) => V::S(a.value(row)),
            _ => V::N,
        }
    }
}

/// Write `batch` as the window table `table` in `dir`; returns the row count (no file for 0).
pub fn write_table(
    dir: &Path,
    table: &'static str,
    window_id: i64,
    batch: &RecordBatch,
) -> Result<u64> {
    let spec = table_spec(table).ok_or_else(|| Error::Internal(format!("no table {table}")))?;
    let schema = batch.schema();
    for field in schema.fields() {
        if !spec.columns.iter().any(|c| c.name == field.name()) {
            return Err(Error::Internal(format!(
                "nsys mapping of {table}: column {} is not in the window format",
                field.name()
            )));
        }
    }
    let mut skip = Vec::new();
    let mut columns = Vec::new();
    for c in spec.columns {
        let Ok(at) = schema.index_of(c.name) else {
            if !c.required {
                skip.push(c.name);
            }
            columns.push(Column::Absent);
            continue;
        };
        let array = batch.column(at);
        columns.push(match c.ty {
            ColType::Str => {
                let a = cast(array, &datafusion::arrow::datatypes::DataType::Utf8)?;
                Column::Text(downcast::<StringArray>(&a, c.name)?.clone())
            }
            _ => {
                let a = cast(array, &datafusion::arrow::datatypes::DataType::Int64)?;
                Column::Int(downcast::<Int64Array>(&a, c.name)?.clone())
            }
        });
    }
    let mut t = Table::new(dir, table, window_id, &skip, &[]);
    let mut values: Vec<V<'_>> = Vec::with_capacity(columns.len());
    for row in 0..batch.num_rows() {
        values.clear();
        values.extend(columns.iter().map(|c| c.cell(row)));
        t.push(&values);
    }
    t.finish()
}

fn downcast<'a, T: 'static>(a: &'a dyn Array, column: &str) -> Result<&'a T> {
    a.as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| Error::Internal(format!("column {column}: unexpected array type")))
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
