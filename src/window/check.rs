//! Checking one Parquet file against its canonical schema (window-format.md, "Reading
//! rules"): required columns present, every canonical column castable to its table type,
//! extra columns kept. Reads the footer only.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::compute::can_cast_types;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::Error;
use crate::schema::{is_text, ColType, TableSpec};
use crate::Result;

/// A Parquet file that passed its schema check.
#[derive(Debug, Clone)]
pub struct CheckedFile {
    pub path: PathBuf,
    pub rows: u64,
    /// The Arrow schema stored in the file.
    pub file_schema: SchemaRef,
}

/// Read `path`'s footer and check its columns against `spec`.
pub fn check_file(spec: &TableSpec, path: &Path) -> Result<CheckedFile> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::CorruptParquet {
            file: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let file_schema = builder.schema().clone();
    if rows > 0 {
        check_columns(spec, path, &file_schema)?;
    }
    Ok(CheckedFile {
        path: path.to_path_buf(),
        rows,
        file_schema,
    })
}

fn check_columns(spec: &TableSpec, path: &Path, schema: &Schema) -> Result<()> {
    for col in spec.columns {
        match schema.field_with_name(col.name) {
            Err(_) if col.required => {
                return Err(Error::MissingColumn {
                    file: path.to_path_buf(),
                    column: col.name.to_string(),
                    expected: col.ty.contract_name().to_string(),
                })
            }
            Err(_) => {}
            Ok(field) => {
                if !col.ty.accepts(field.data_type()) {
                    return Err(type_error(path, col.name, col.ty, field.data_type()));
                }
            }
        }
    }
    if spec.extra_are_metrics {
        for field in schema.fields() {
            let is_metric = spec.column(field.name()).is_none();
            if is_metric && !ColType::F64.accepts(field.data_type()) {
                return Err(type_error(
                    path,
                    field.name(),
                    ColType::F64,
                    field.data_type(),
                ));
            }
        }
    }
    Ok(())
}

fn type_error(path: &Path, column: &str, expected: ColType, found: &DataType) -> Error {
    Error::ColumnType {
        file: path.to_path_buf(),
        column: column.to_string(),
        expected: expected.contract_name().to_string(),
        found: found.to_string(),
    }
}

/// The table schema for `spec` read from `files`: the canonical columns in table types, then
/// extra columns in first-seen order (text as Utf8View, pm_sampling metrics as Float64).
pub fn table_schema_for(spec: &TableSpec, files: &[CheckedFile]) -> Result<SchemaRef> {
    let mut fields: Vec<Field> = spec
        .columns
        .iter()
        .map(|c| Field::new(c.name, c.ty.table_type(), true))
        .collect();
    for file in files {
        for field in file.file_schema.fields() {
            if spec.column(field.name()).is_some() {
                continue;
            }
            let wanted = extra_column_type(spec, field.data_type());
            match fields.iter().find(|f| f.name() == field.name()) {
                Some(existing) => {
                    if !can_cast_types(field.data_type(), existing.data_type()) {
                        return Err(Error::ColumnType {
                            file: file.path.clone(),
                            column: field.name().clone(),
                            expected: existing.data_type().to_string(),
                            found: field.data_type().to_string(),
                        });
                    }
                }
                None => fields.push(Field::new(field.name(), wanted, true)),
            }
        }
    }
    Ok(Arc::new(Schema::new(fields)))
}

fn extra_column_type(spec: &TableSpec, found: &DataType) -> DataType {
    if spec.extra_are_metrics {
        return DataType::Float64;
    }
    if is_text(found) {
        return DataType::Utf8View;
    }
    match found {
        DataType::Dictionary(_, value) => value.as_ref().clone(),
        DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
        other => other.clone(),
    }
}
