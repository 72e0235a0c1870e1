//! Stage `load`, parquetdir side: `nsys export --type parquetdir` (one `<TABLE>.parquet`
//! per table, or a folder of parts) -> the Arrow batches of each source table, in the shape
//! it declares (columns by name, Int64 or lossily decoded Utf8).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BinaryArray, LargeBinaryArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;

use super::load::{assemble, bad, schema_of, Part, Report};
use super::source::{Source, Ty};
use crate::error::Error;
use crate::Result;

/// `nsys export --type parquetdir`: one `<TABLE>.parquet` per table in the folder; a table
/// may also be a folder `<TABLE>/` (or `<TABLE>.parquet/`) of Parquet parts, read in name
/// order.
pub(super) fn load_parquetdir(dir: &Path) -> Result<Report> {
    let mut tables: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let p = entry.map_err(|e| Error::io(dir, e))?.path();
        let is_parquet = p.extension().is_some_and(|e| e == "parquet");
        let stem = if is_parquet {
            p.file_stem()
        } else {
            p.file_name()
        };
        let Some(stem) = stem.and_then(|s| s.to_str()).map(str::to_string) else {
            continue;
        };
        if p.is_dir() {
            let mut parts: Vec<PathBuf> = std::fs::read_dir(&p)
                .map_err(|e| Error::io(&p, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && f.extension().is_some_and(|e| e == "parquet"))
                .collect();
            parts.sort();
            if !parts.is_empty() {
                tables.push((stem, parts));
            }
        } else if is_parquet {
            tables.push((stem, vec![p]));
        }
    }
    if tables.is_empty() {
        return Err(bad(
            dir,
            "not an nsys report (neither an SQLite file nor a folder of .parquet tables)",
        ));
    }
    assemble(dir, |source| {
        let Some((_, parts)) = tables
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(source.name))
        else {
            return Ok(None);
        };
        let mut batches = Vec::new();
        for part in parts {
            batches.push(read_parquet_table(part, source)?);
        }
        Ok(Some(Part::Loaded(batches)))
    })
}

fn read_parquet_table(file: &Path, source: &Source) -> Result<RecordBatch> {
    let corrupt = |e: &dyn std::fmt::Display| Error::CorruptParquet {
        file: file.to_path_buf(),
        reason: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    };
    let handle = std::fs::File::open(file).map_err(|e| Error::io(file, e))?;
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(handle)
        .map_err(|e| corrupt(&e))?
        .build()
        .map_err(|e| corrupt(&e))?;
    let mut batches = Vec::new();
    for b in reader {
        batches.push(b.map_err(|e| corrupt(&e))?);
    }
    let Some(first) = batches.first() else {
        return Ok(RecordBatch::new_empty(schema_of(source)));
    };
    let file_schema = first.schema();
    let joined = datafusion::arrow::compute::concat_batches(&file_schema, &batches)
        .map_err(|e| corrupt(&e))?;
    let rows = joined.num_rows();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for col in source.columns {
        let found = file_schema
            .fields()
            .iter()
            .position(|f| f.name().eq_ignore_ascii_case(col.name));
        let array = match found {
            Some(i) => convert(joined.column(i), col.ty).map_err(|reason| Error::ColumnType {
                file: file.to_path_buf(),
                column: col.name.to_string(),
                expected: format!("{:?}", col.ty).to_lowercase(),
                found: reason,
            })?,
            None if col.required => {
                return Err(Error::MissingReportColumn {
                    file: file.to_path_buf(),
                    table: source.name.to_string(),
                    column: col.name.to_string(),
                })
            }
            None => datafusion::arrow::array::new_null_array(
                &match col.ty {
                    Ty::Int => DataType::Int64,
                    Ty::Text => DataType::Utf8,
                },
                rows,
            ),
        };
        arrays.push(array);
    }
    RecordBatch::try_new(schema_of(source), arrays).map_err(|e| Error::Internal(e.to_string()))
}

/// A Parquet column as Int64 or Utf8; binary text is decoded lossily.
fn convert(array: &ArrayRef, ty: Ty) -> std::result::Result<ArrayRef, String> {
    let found = || array.data_type().to_string();
    match ty {
        Ty::Int => {
            if !(array.data_type().is_integer() || array.data_type().is_null()) {
                return Err(found());
            }
            let out = cast(array, &DataType::Int64).map_err(|_| found())?;
            // Unsigned values above i64::MAX do not fit: they read as NULL, not wrapped.
            Ok(out)
        }
        Ty::Text => {
            if let Some(a) = array.as_any().downcast_ref::<BinaryArray>() {
                return Ok(lossy(a.iter()));
            }
            if let Some(a) = array.as_any().downcast_ref::<LargeBinaryArray>() {
                return Ok(lossy(a.iter()));
            }
            cast(array, &DataType::Utf8).map_err(|_| found())
        }
    }
}

/// Binary text as Utf8, invalid UTF-8 replaced by U+FFFD.
fn lossy<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> ArrayRef {
    let mut b = StringBuilder::new();
    for v in values {
        match v {
            Some(bytes) => b.append_value(String::from_utf8_lossy(bytes)),
            None => b.append_null(),
        }
    }
    Arc::new(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, StringArray};

    #[test]
    fn parquet_binary_text_is_read_lossily_and_floats_are_refused_as_integers() {
        let binary: ArrayRef = Arc::new(BinaryArray::from(vec![Some(&b"ok\xff"[..]), None]));
        let text = convert(&binary, Ty::Text).unwrap();
        let text = text.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(text.value(0), "ok\u{fffd}");
        assert!(text.is_null(1));
        let floats: ArrayRef = Arc::new(datafusion::arrow::array::Float64Array::from(vec![1.0]));
        assert_eq!(convert(&floats, Ty::Int).unwrap_err(), "Float64");
    }
}
