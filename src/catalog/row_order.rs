//! Each file's row order claim (window::row_order), read from the footers the catalog has
//! read already: told to the engine, which then orders by stream and time without sorting
//! (engine::stream_order), and listed as the `row_order` table (the doctor names the files
//! that claim nothing: their queries sort).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::ListingTableUrl;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use crate::engine::stream_order::OrderClaims;
use crate::error::Error;
use crate::window::row_order::{StreamOrderCheck, ROW_ORDER_KEY, STREAM_ROW_ORDER};
use crate::window::Window;
use crate::Result;

/// Tell `ctx`'s engine which files of `window` claim an order, by the names its scans use.
pub fn tell_the_engine(ctx: &SessionContext, window: &Window) -> Result<()> {
    let Some(claims) = OrderClaims::of(ctx) else {
        return Ok(());
    };
    for file in window.tables.iter().flat_map(|t| &t.files) {
        if let Some(claim) = file.file_schema.metadata().get(ROW_ORDER_KEY) {
            let path = std::path::absolute(&file.path).map_err(|e| Error::io(&file.path, e))?;
            let url = ListingTableUrl::parse(path.to_string_lossy())?;
            claims.insert(url.prefix().as_ref().to_string(), claim.clone());
        }
    }
    Ok(())
}

/// One row per file of a table with a stream and a time: the partition values, the table,
/// the file and whether it claims the order.
pub fn row_order_table(
    window: &Window,
    partition_fields: &[Field],
    partition_values: &[Vec<ScalarValue>],
) -> Result<MemTable> {
    let mut parts: Vec<Vec<ScalarValue>> = vec![Vec::new(); partition_fields.len()];
    let (mut tables, mut files, mut claimed) = (Vec::new(), Vec::new(), Vec::new());
    for source in &window.tables {
        for file in &source.files {
            if StreamOrderCheck::for_schema(&file.file_schema).is_none() {
                continue;
            }
            // the window the file belongs to: the folder it is in
            let at = (window.windows.iter())
                .position(|w| file.path.parent() == Some(w.path.as_path()))
                .unwrap_or(0);
            for (column, value) in parts.iter_mut().zip(&partition_values[at]) {
                column.push(value.clone());
            }
            tables.push(source.spec.name);
            files.push(file.path.display().to_string());
            let claim = file.file_schema.metadata().get(ROW_ORDER_KEY);
            claimed.push(claim.is_some_and(|c| c == STREAM_ROW_ORDER));
        }
    }
    let mut fields: Vec<Field> = partition_fields.to_vec();
    fields.push(Field::new("table_name", DataType::Utf8, false));
    fields.push(Field::new("file", DataType::Utf8, false));
    fields.push(Field::new("claimed", DataType::Boolean, false));
    let schema = Arc::new(Schema::new(fields));
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (values, field) in parts.into_iter().zip(partition_fields) {
        columns.push(match values.is_empty() {
            true => datafusion::arrow::array::new_empty_array(field.data_type()),
            false => ScalarValue::iter_to_array(values)?,
        });
    }
    columns.push(Arc::new(StringArray::from(tables)));
    columns.push(Arc::new(StringArray::from(files)));
    columns.push(Arc::new(BooleanArray::from(claimed)));
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    Ok(MemTable::try_new(schema, vec![vec![batch]])?)
}
