//! Column access for the pftrace plans' batches: any integer or text type, by name.

use datafusion::arrow::array::{
    Array, AsArray, Int64Array, RecordBatch, StringArray, StringViewArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};

use crate::error::Error;
use crate::Result;

fn column<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b dyn Array> {
    batch
        .column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| Error::Internal(format!("pftrace plan has no column `{name}`")))
}

/// Column `name` as Int64 (NULL read as 0 by [`int`]).
pub fn ints(batch: &RecordBatch, name: &str) -> Result<Int64Array> {
    let c = cast(column(batch, name)?, &DataType::Int64)?;
    Ok(c.as_primitive::<Int64Type>().clone())
}

/// A text column, read where it is (string views, the plans' usual text, are not copied).
pub enum Texts {
    Plain(StringArray),
    Views(StringViewArray),
}

/// Column `name` as text.
pub fn texts(batch: &RecordBatch, name: &str) -> Result<Texts> {
    let c = column(batch, name)?;
    Ok(match c.data_type() {
        DataType::Utf8View => Texts::Views(c.as_string_view().clone()),
        _ => Texts::Plain(cast(c, &DataType::Utf8)?.as_string::<i32>().clone()),
    })
}

/// Column `name` as booleans.
pub fn bools(batch: &RecordBatch, name: &str) -> Result<Vec<bool>> {
    let c = cast(column(batch, name)?, &DataType::Boolean)?;
    let b = c.as_boolean();
    Ok((0..b.len()).map(|i| b.is_valid(i) && b.value(i)).collect())
}

/// Column `name`, a list of `{ordinal, event_id}` structs, as each row's event ids in
/// ordinal order (NULL: empty).
pub fn ordered_id_lists(batch: &RecordBatch, name: &str) -> Result<Vec<Vec<u64>>> {
    let c = column(batch, name)?;
    let list = c
        .as_list_opt::<i32>()
        .ok_or_else(|| Error::Internal(format!("pftrace plan column `{name}` is not a list")))?;
    let pairs = list.values().as_struct();
    let field = |f: &str| -> Result<Int64Array> {
        let c = pairs
            .column_by_name(f)
            .ok_or_else(|| Error::Internal(format!("pftrace plan column `{name}` has no `{f}`")))?;
        Ok(cast(c, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .clone())
    };
    let (ordinal, event) = (field("ordinal")?, field("event_id")?);
    let offsets = list.value_offsets();
    Ok((0..list.len())
        .map(|i| {
            if list.is_null(i) {
                return Vec::new();
            }
            let range = offsets[i] as usize..offsets[i + 1] as usize;
            let mut items: Vec<(i64, u64)> = range
                .filter(|&j| event.is_valid(j))
                .map(|j| (int(&ordinal, j), event.value(j) as u64))
                .collect();
            items.sort_unstable();
            items.into_iter().map(|(_, id)| id).collect()
        })
        .collect())
}

pub fn int(a: &Int64Array, i: usize) -> i64 {
    if a.is_null(i) {
        0
    } else {
        a.value(i)
    }
}

pub fn text(a: &Texts, i: usize) -> Option<&str> {
    match a {
        Texts::Plain(a) => (!a.is_null(i)).then(|| a.value(i)),
        Texts::Views(a) => (!a.is_null(i)).then(|| a.value(i)),
    }
}
