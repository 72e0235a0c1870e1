//! Stage `sink`: encode query results. Writers follow arrow's shape (`try_new(writer,
//! schema)` -> `write(&batch)` -> `finish()`) and stream, except the aligned table, which
//! needs every row it shows to size its columns (`table`: the layouts fitted to a width).

pub mod chrome;
pub mod json_text;
pub mod perfetto;
pub mod table;

use std::io::Write;
use std::str::FromStr;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;

pub use self::table::Fit;

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
    /// One `column = value` line per value, a blank line between rows.
    Line,
}

impl OutputFormat {
    pub const NAMES: &'static [&'static str] =
        &["table", "csv", "json", "ndjson", "parquet", "line"];

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
            "line" => OutputFormat::Line,
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
    Table(table::TableWriter<W>),
    Line(table::LineWriter<W>),
    Csv(Box<datafusion::arrow::csv::Writer<W>>),
    Json { out: W, rows: usize },
    Ndjson(datafusion::arrow::json::LineDelimitedWriter<W>),
    Parquet(Box<ArrowWriter<W>>),
}

impl<W: Write + Send> ResultWriter<W> {
    /// A writer that shows every row and value in full.
    pub fn try_new(out: W, schema: SchemaRef, format: OutputFormat) -> Result<Self> {
        Self::try_new_fitted(out, schema, format, Fit::default())
    }

    /// A writer whose text layouts (table, line) show what `fit` allows; the other formats
    /// are never cut.
    pub fn try_new_fitted(
        out: W,
        schema: SchemaRef,
        format: OutputFormat,
        fit: Fit,
    ) -> Result<Self> {
        let inner = match format {
            OutputFormat::Table => Inner::Table(table::TableWriter::new(out, schema, fit)),
            OutputFormat::Line => Inner::Line(table::LineWriter::new(out, schema, fit.max_rows)),
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
            Inner::Table(w) => w.write(batch)?,
            Inner::Line(w) => w.write(batch)?,
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
            Inner::Table(w) => w.finish(),
            Inner::Line(w) => w.finish(),
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

fn io_error(e: std::io::Error) -> Error {
    Error::Write(e)
}
