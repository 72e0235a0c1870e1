//! Stage `sink`: encode query results. Writers follow arrow's shape (`try_new(writer,
//! schema)` -> `write(&batch)` -> `finish()`) and stream, except the aligned table, which
//! needs every row to size its columns.

pub mod chrome;
pub mod json_text;
pub mod perfetto;

use std::io::Write;
use std::str::FromStr;

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use parquet::arrow::ArrowWriter;

use crate::error::Error;
use crate::Result;

/// How query results are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// An aligned text table (for terminals).
    Table,
    Csv,
    /// One JSON array of row objects.
    Json,
    /// One JSON object per line.
    Ndjson,
    Parquet,
}

impl OutputFormat {
    pub const NAMES: &'static [&'static str] = &["table", "csv", "json", "ndjson", "parquet"];

    /// Whether the format is binary (never written to a terminal).
    pub fn is_binary(self) -> bool {
        self == OutputFormat::Parquet
    }
}

impl FromStr for OutputFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "table" => OutputFormat::Table,
            "csv" => OutputFormat::Csv,
            "json" => OutputFormat::Json,
            "ndjson" => OutputFormat::Ndjson,
            "parquet" => OutputFormat::Parquet,
            other => {
                return Err(Error::Usage(format!(
                    "unknown format `{other}` (expected one of {})",
                    Self::NAMES.join(", ")
                )))
            }
        })
    }
}

/// A streaming writer of query results in one [`OutputFormat`].
pub struct ResultWriter<W: Write + Send> {
    inner: Inner<W>,
}

enum Inner<W: Write + Send> {
    Table { out: W, batches: Vec<RecordBatch> },
    Csv(Box<datafusion::arrow::csv::Writer<W>>),
    Json { out: W, rows: usize },
    Ndjson(datafusion::arrow::json::LineDelimitedWriter<W>),
    Parquet(Box<ArrowWriter<W>>),
}

impl<W: Write + Send> ResultWriter<W> {
    pub fn try_new(out: W, schema: SchemaRef, format: OutputFormat) -> Result<Self> {
        let inner = match format {
            OutputFormat::Table => Inner::Table {
                out,
                batches: Vec::new(),
            },
            OutputFormat::Csv => Inner::Csv(Box::new(datafusion::arrow::csv::Writer::new(out))),
            OutputFormat::Json => Inner::Json { out, rows: 0 },
            OutputFormat::Ndjson => {
                Inner::Ndjson(datafusion::arrow::json::LineDelimitedWriter::new(out))
            }
            OutputFormat::Parquet => Inner::Parquet(Box::new(
                ArrowWriter::try_new(out, schema, None)
                    .map_err(|e| Error::parquet_write(e, None))?,
            )),
        };
        Ok(ResultWriter { inner })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match &mut self.inner {
            Inner::Table { batches, .. } => batches.push(batch.clone()),
            Inner::Csv(w) => w.write(batch)?,
            Inner::Json { out, rows } => {
                // One array across batches: arrow's ArrayWriter brackets each call alone.
                let mut buf = Vec::new();
                {
                    let mut w = datafusion::arrow::json::LineDelimitedWriter::new(&mut buf);
                    w.write(batch)?;
                    w.finish()?;
                }
                for line in buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    let sep: &[u8] = if *rows == 0 { b"[\n" } else { b",\n" };
                    out.write_all(sep).map_err(io_error)?;
                    out.write_all(line).map_err(io_error)?;
                    *rows += 1;
                }
            }
            Inner::Ndjson(w) => w.write(batch)?,
            Inner::Parquet(w) => w.write(batch).map_err(|e| Error::parquet_write(e, None))?,
        }
        Ok(())
    }

    /// Write what remains (table body, closing bracket, Parquet footer) and flush.
    pub fn finish(self) -> Result<()> {
        match self.inner {
            Inner::Table { mut out, batches } => {
                let shown = batches
                    .iter()
                    .map(shorten_long_text)
                    .collect::<Result<Vec<_>>>()?;
                let text = pretty_format_batches(&shown)?;
                writeln!(out, "{text}").map_err(io_error)?;
                out.flush().map_err(io_error)
            }
            Inner::Csv(w) => w.into_inner().flush().map_err(io_error),
            Inner::Json { mut out, rows } => {
                let close: &[u8] = if rows == 0 { b"[]\n" } else { b"\n]\n" };
                out.write_all(close).map_err(io_error)?;
                out.flush().map_err(io_error)
            }
            Inner::Ndjson(mut w) => {
                w.finish()?;
                w.into_inner().flush().map_err(io_error)
            }
            Inner::Parquet(w) => {
                let mut out = w.into_inner().map_err(|e| Error::parquet_write(e, None))?;
                out.flush().map_err(io_error)
            }
        }
    }
}

/// Longest text cell the aligned table shows in full; longer ones (demangled C++ kernel names
/// run to hundreds of characters) end in `…`. The other formats always carry full values.
pub const TABLE_CELL_MAX_CHARS: usize = 80;

fn shorten_long_text(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(|column| {
            if !crate::schema::is_text(column.data_type()) {
                return Ok(column.clone());
            }
            let text = cast(column, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let shown: StringArray = text.iter().map(|v| v.map(shorten)).collect();
            Ok(Arc::new(shown) as ArrayRef)
        })
        .collect::<Result<Vec<_>>>()?;
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&columns)
        .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), true))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

fn shorten(text: &str) -> String {
    match text.char_indices().nth(TABLE_CELL_MAX_CHARS - 1) {
        Some((cut, _)) if text.chars().count() > TABLE_CELL_MAX_CHARS => {
            format!("{}…", &text[..cut])
        }
        _ => text.to_string(),
    }
}

fn io_error(e: std::io::Error) -> Error {
    Error::Write(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_cells_over_the_limit_end_in_an_ellipsis() {
        let long = "k".repeat(TABLE_CELL_MAX_CHARS + 5);
        let short = shorten(&long);
        assert_eq!(short.chars().count(), TABLE_CELL_MAX_CHARS);
        assert!(short.ends_with('…'));
        assert_eq!(shorten("gemm"), "gemm");
        assert_eq!(
            shorten(&"é".repeat(TABLE_CELL_MAX_CHARS)),
            "é".repeat(TABLE_CELL_MAX_CHARS)
        );
    }
}
