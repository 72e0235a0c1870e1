//! Stage `window`, write side: a buffered, chunked Parquet writer for one table of a window
//! (canonical columns in file types, the format's key-value metadata, lazy file creation).
//! In: rows of cells. Out: `<table>.parquet`. The synthetic generator and the importers use it.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    UInt64Builder,
};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use super::row_order::StreamOrderCheck;
use crate::schema::{table_spec, ColType, SCHEMA_VERSION};
use crate::{Error, Result};

/// Rows buffered before they go to the Parquet writer as one batch.
const BATCH_ROWS: usize = 1 << 16;
/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 1 << 20;

/// One cell of a row; `N` is null.
#[derive(Clone, Copy, Debug)]
pub enum V<'a> {
    I(i64),
    U(u64),
    F(f64),
    S(&'a str),
    N,
}

enum Col {
    I64(Int64Builder),
    I32(Int32Builder),
    U64(UInt64Builder),
    F64(Float64Builder),
    Str(StringBuilder),
}

impl Col {
    fn new(ty: ColType) -> Self {
        match ty {
            ColType::I64 => Col::I64(Int64Builder::with_capacity(BATCH_ROWS)),
            ColType::I32 => Col::I32(Int32Builder::with_capacity(BATCH_ROWS)),
            ColType::U64 => Col::U64(UInt64Builder::with_capacity(BATCH_ROWS)),
            ColType::F64 => Col::F64(Float64Builder::with_capacity(BATCH_ROWS)),
            ColType::Str => Col::Str(StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 16)),
        }
    }

    fn push(&mut self, v: V<'_>) {
        match (self, v) {
            (Col::I64(b), V::I(x)) => b.append_value(x),
            (Col::I64(b), V::U(x)) => b.append_value(x as i64),
            (Col::I32(b), V::I(x)) => b.append_value(x as i32),
            (Col::U64(b), V::U(x)) => b.append_value(x),
            (Col::U64(b), V::I(x)) => b.append_value(x as u64),
            (Col::F64(b), V::F(x)) => b.append_value(x),
            (Col::Str(b), V::S(s)) => b.append_value(s),
            (Col::I64(b), V::N) => b.append_null(),
            (Col::I32(b), V::N) => b.append_null(),
            (Col::U64(b), V::N) => b.append_null(),
            (Col::F64(b), V::N) => b.append_null(),
            (Col::Str(b), V::N) => b.append_null(),
            (_, v) => panic!("table writer: cell {v:?} does not fit its column"),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Col::I64(b) => Arc::new(b.finish()),
            Col::I32(b) => Arc::new(b.finish()),
            Col::U64(b) => Arc::new(b.finish()),
            Col::F64(b) => Arc::new(b.finish()),
            Col::Str(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Col::I64(b) => b.len(),
            Col::I32(b) => b.len(),
            Col::U64(b) => b.len(),
            Col::F64(b) => b.len(),
            Col::Str(b) => b.len(),
        }
    }
}

/// Whether a column benefits from dictionary encoding (text and low-cardinality ints).
/// `bytes` is one: a step copies the same tensors every time (10 sizes among 16 copies of
/// DLRM rank 0, 5 among 279 in the nsys report); as plain values the `copies` question read
/// 8 MB per row group instead of 0.5 (4 M kernels: 17.6-18.6 -> 13.6-14.0 ms). A column of
/// many values falls back to plain by itself.
fn wants_dictionary(name: &str, ty: ColType) -> bool {
    match ty {
        ColType::Str => true,
        ColType::F64 | ColType::U64 => false,
        ColType::I64 | ColType::I32 => {
            !(name.ends_with("_ns")
                || name == "queued"
                || name == "correlation_id"
                || name.ends_with("external_id")
                || name == "cuda_event_sync_id")
        }
    }
}

/// One table: its kept columns (a subset of the canonical spec plus extra columns),
/// a row buffer, and the Parquet writer, opened on the first flushed row.
pub struct Table {
    pub name: &'static str,
    path: PathBuf,
    window_id: i64,
    schema: SchemaRef,
    /// For each value position of `push`: the buffer column it goes to, or None (skipped).
    slots: Vec<Option<usize>>,
    cols: Vec<Col>,
    writer: Option<ArrowWriter<BufWriter<File>>>,
    /// The first flush error, reported by `finish`.
    err: Option<Error>,
    /// GPU activity tables: whether the rows come in time order per stream (claimed if so).
    order: Option<StreamOrderCheck>,
    pub rows: u64,
}

impl Table {
    /// A table of the canonical spec `name`, without the columns in `skip`, plus `extra`
    /// columns appended (pm_sampling metrics, an importer's source names). `push` takes a value for every spec column
    /// (in spec order) followed by one per extra column.
    pub fn new(
        dir: &Path,
        name: &'static str,
        window_id: i64,
        skip: &[&str],
        extra: &[(&'static str, ColType)],
    ) -> Self {
        let spec = table_spec(name).expect("windows hold canonical tables only");
        let mut fields = Vec::new();
        let mut slots = Vec::new();
        let mut cols = Vec::new();
        let all = spec
            .columns
            .iter()
            .map(|c| (c.name, c.ty))
            .chain(extra.iter().copied());
        for (cname, ty) in all {
            if skip.contains(&cname) {
                slots.push(None);
                continue;
            }
            let mut f = Field::new(cname, ty.file_type(), true);
            if (cname.ends_with("_ns") || cname == "queued") && ty == ColType::I64 {
                let meta: HashMap<String, String> = [("unit", "ns"), ("clock", "unix")]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                f = f.with_metadata(meta);
            }
            slots.push(Some(fields.len()));
            fields.push(f);
            cols.push(Col::new(ty));
        }
        let schema = Arc::new(Schema::new(fields));
        Table {
            name,
            path: dir.join(format!("{name}.parquet")),
            window_id,
            order: StreamOrderCheck::for_schema(&schema),
            schema,
            slots,
            cols,
            writer: None,
            err: None,
            rows: 0,
        }
    }

    /// Append one row (values in spec order, then extras).
    pub fn push(&mut self, values: &[V<'_>]) {
        debug_assert_eq!(values.len(), self.slots.len(), "{}", self.name);
        for (slot, v) in self.slots.iter().zip(values) {
            if let Some(i) = slot {
                self.cols[*i].push(*v);
            }
        }
        self.rows += 1;
        if self.cols[0].len() >= BATCH_ROWS {
            if let Err(e) = self.flush() {
                self.err.get_or_insert(e);
            }
        }
    }

    fn props(&self) -> Result<WriterProperties> {
        let zstd = ZstdLevel::try_new(1).map_err(|e| Error::Internal(e.to_string()))?;
        let kv = vec![
            KeyValue::new("tracesql.schema_version".into(), SCHEMA_VERSION.to_string()),
            KeyValue::new("tracesql.kind".into(), self.name.to_string()),
            KeyValue::new("tracesql.window_id".into(), self.window_id.to_string()),
        ];
        let mut b = WriterProperties::builder()
            .set_compression(Compression::ZSTD(zstd))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            .set_dictionary_enabled(false)
            .set_key_value_metadata(Some(kv));
        for f in self.schema.fields() {
            let ty = match f.data_type() {
                t if crate::schema::is_text(t) => ColType::Str,
                datafusion::arrow::datatypes::DataType::Int32 => ColType::I32,
                datafusion::arrow::datatypes::DataType::UInt64 => ColType::U64,
                datafusion::arrow::datatypes::DataType::Float64 => ColType::F64,
                _ => ColType::I64,
            };
            if wants_dictionary(f.name(), ty) {
                b = b.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
            }
        }
        Ok(b.build())
    }

    fn flush(&mut self) -> Result<()> {
        if self.cols.is_empty() || self.cols[0].len() == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.cols.iter_mut().map(Col::finish).collect();
        self.write_batch(arrays)
    }

    fn write_batch(&mut self, arrays: Vec<ArrayRef>) -> Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| Error::Internal(format!("{}: {e}", self.name)))?;
        if self.writer.is_none() {
            let file = File::create(&self.path).map_err(|e| Error::io(&self.path, e))?;
            let props = self.props()?;
            let w = ArrowWriter::try_new(BufWriter::new(file), self.schema.clone(), Some(props))
                .map_err(|e| Error::parquet_write(e, Some(&self.path)))?;
            self.writer = Some(w);
        }
        if let Some(order) = &mut self.order {
            order.observe(&batch);
        }
        let w = self.writer.as_mut().expect("writer opened above");
        w.write(&batch)
            .map_err(|e| Error::parquet_write(e, Some(&self.path)))
    }

    /// The file schema: the kept columns, in order, in their file types.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Append whole columns, one per kept column of [`Table::schema`] in its file type, after
    /// any buffered rows: a mapped batch goes to the file without a pass through cells.
    pub fn push_columns(&mut self, arrays: Vec<ArrayRef>) -> Result<()> {
        let n = arrays.first().map_or(0, |a| a.len());
        if n == 0 {
            return Ok(());
        }
        self.flush()?;
        self.write_batch(arrays)?;
        self.rows += n as u64;
        Ok(())
    }

    /// Flush the buffer and close the file (no file when the table got no rows).
    pub fn finish(mut self) -> Result<u64> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.flush()?;
        if let Some(mut w) = self.writer.take() {
            if let Some(claim) = self.order.as_ref().and_then(StreamOrderCheck::claim) {
                w.append_key_value_metadata(claim);
            }
            w.close()
                .map_err(|e| Error::parquet_write(e, Some(&self.path)))?;
        }
        Ok(self.rows)
    }
}
