//! Stage `window`, nsys side: one process's mapped rows, as they stream -> the Parquet tables of a window
//! (through the window writer) and its `window_info`. Columns are matched to the canonical
//! spec by name; a required column the mapping has no source for is written as NULL, an
//! optional one is left out.

use std::path::Path;

use datafusion::arrow::array::{new_null_array, Array, ArrayRef, Int64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Error;
use crate::schema::{table_spec, SCHEMA_VERSION};
use crate::window::writer::{Table, V};
use crate::Result;

/// One window table being written: one process's rows of one mapping, batch after batch,
/// in the order given. Columns go over whole, cast to their file types: a required column
/// the mapping lacks is written as nulls, an optional one is left out. The file is made on
/// the first row (no file for a table without rows).
pub struct TableSink {
    table: Table,
    /// The earliest `start_ns` written (not kept for cuda_event: its times say nothing of
    /// the window's start).
    pub first_start: Option<i64>,
    keep_start: bool,
}

impl TableSink {
    /// A sink for window table `table` in `dir`, fed batches of `schema` (a mapping's
    /// columns, the process key removed).
    pub fn try_new(
        dir: &Path,
        table: &'static str,
        window_id: i64,
        schema: &Schema,
    ) -> Result<TableSink> {
        let spec = table_spec(table).ok_or_else(|| Error::Internal(format!("no table {table}")))?;
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
        Ok(TableSink {
            table: Table::new(dir, table, window_id, &skip, &[]),
            first_start: None,
            keep_start: table != "cuda_event",
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.keep_start {
            if let Some(min) = batch
                .column_by_name("start_ns")
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
                .and_then(datafusion::arrow::compute::min)
            {
                self.first_start = Some(self.first_start.map_or(min, |f| f.min(min)));
            }
        }
        let file_schema = self.table.schema().clone();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(file_schema.fields().len());
        for field in file_schema.fields() {
            arrays.push(match batch.schema().index_of(field.name()) {
                Ok(at) => cast(batch.column(at), field.data_type())?,
                Err(_) => new_null_array(field.data_type(), batch.num_rows()),
            });
        }
        self.table.push_columns(arrays)
    }

    /// Close the file; the rows written.
    pub fn finish(self) -> Result<u64> {
        self.table.finish()
    }

    /// Drop what was written (the table is written again, from sorted rows).
    pub fn abandon(self, dir: &Path) -> Result<()> {
        let path = dir.join(format!("{}.parquet", self.table.name));
        drop(self.table);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(()),
        }
    }
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
