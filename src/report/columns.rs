//! Stage `report` (plot input): a report's columns read by name across its batches, as the
//! plots want them (`Option<i64>`, `Option<f64>`, text, partition keys). A column that is
//! missing or of a type that does not cast says so in one line, which the page shows
//! instead of the plot.

use std::fmt;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};

use super::ReportOutput;

/// Why a plot could not be drawn: one line for the page.
pub type Missing = String;

fn column_arrays(out: &ReportOutput, name: &str, to: &DataType) -> Result<Vec<ArrayRef>, Missing> {
    let Ok(index) = out.schema.index_of(name) else {
        return Err(format!("column `{name}` is missing"));
    };
    out.batches
        .iter()
        .map(|b| {
            cast(b.column(index), to).map_err(|_| {
                format!(
                    "column `{name}` has type {}, expected {to}",
                    out.schema.field(index).data_type()
                )
            })
        })
        .collect()
}

/// An integer column (ns, ids), over every batch in order.
pub fn ints(out: &ReportOutput, name: &str) -> Result<Vec<Option<i64>>, Missing> {
    let arrays = column_arrays(out, name, &DataType::Int64)?;
    Ok(arrays
        .iter()
        .flat_map(|a| a.as_primitive::<Int64Type>().iter().collect::<Vec<_>>())
        .collect())
}

/// A float column (percentages).
pub fn floats(out: &ReportOutput, name: &str) -> Result<Vec<Option<f64>>, Missing> {
    let arrays = column_arrays(out, name, &DataType::Float64)?;
    Ok(arrays
        .iter()
        .flat_map(|a| a.as_primitive::<Float64Type>().iter().collect::<Vec<_>>())
        .collect())
}

/// A text column (names).
pub fn texts(out: &ReportOutput, name: &str) -> Result<Vec<Option<String>>, Missing> {
    let arrays = column_arrays(out, name, &DataType::Utf8)?;
    Ok(arrays
        .iter()
        .flat_map(|a| {
            a.as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect())
}

/// One partition column's value; integers sort as numbers, before text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KeyValue {
    Null,
    Int(i64),
    Text(String),
}

/// A row's partition: `(column, value)` for each partition key, in order. Every row of a
/// report has the same columns, so partitions sort by their values.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Partition(pub Vec<(String, KeyValue)>);

impl fmt::Display for Partition {
    /// `rank=3`, `host=h1 rank=3`; empty for one window.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match value {
                KeyValue::Null => write!(f, "{key}=NULL")?,
                KeyValue::Int(v) => write!(f, "{key}={v}")?,
                KeyValue::Text(v) => write!(f, "{key}={v}")?,
            }
        }
        Ok(())
    }
}

/// Every row's partition (all empty for one window).
pub fn partitions(out: &ReportOutput) -> Result<Vec<Partition>, Missing> {
    let rows = out.num_rows();
    let mut keys: Vec<Vec<(String, KeyValue)>> = vec![Vec::new(); rows];
    for key in &out.partition_keys {
        let Ok(index) = out.schema.index_of(key) else {
            return Err(format!("partition column `{key}` is missing"));
        };
        let values: Vec<KeyValue> = if out.schema.field(index).data_type().is_integer() {
            ints(out, key)?
                .into_iter()
                .map(|v| v.map_or(KeyValue::Null, KeyValue::Int))
                .collect()
        } else {
            texts(out, key)?
                .into_iter()
                .map(|v| v.map_or(KeyValue::Null, KeyValue::Text))
                .collect()
        };
        for (row, value) in keys.iter_mut().zip(values) {
            row.push((key.clone(), value));
        }
    }
    Ok(keys.into_iter().map(Partition).collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;

    fn output() -> ReportOutput {
        let schema = Arc::new(Schema::new(vec![
            Field::new("rank", DataType::Int32, true),
            Field::new("name", DataType::Utf8, true),
            Field::new("total_ns", DataType::Int64, true),
        ]));
        let batch = |rank: Vec<Option<i32>>, name: Vec<&str>, ns: Vec<Option<i64>>| {
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(Int32Array::from(rank)),
                    Arc::new(StringArray::from(name)),
                    Arc::new(Int64Array::from(ns)),
                ],
            )
            .unwrap()
        };
        ReportOutput {
            name: "kernel_summary".into(),
            title: "t".into(),
            partition_keys: vec!["rank".into()],
            schema: schema.clone(),
            batches: vec![
                batch(vec![Some(10)], vec!["a"], vec![Some(5)]),
                batch(vec![Some(2), None], vec!["b", "c"], vec![None, Some(7)]),
            ],
        }
    }

    #[test]
    fn columns_read_across_batches_with_their_nulls() {
        let out = output();
        assert_eq!(
            ints(&out, "total_ns").unwrap(),
            vec![Some(5), None, Some(7)]
        );
        assert_eq!(
            texts(&out, "name").unwrap(),
            vec![Some("a".into()), Some("b".into()), Some("c".into())]
        );
        assert_eq!(ints(&out, "nope").unwrap_err(), "column `nope` is missing");
    }

    #[test]
    fn integer_partitions_sort_as_numbers_and_print_as_key_value() {
        let out = output();
        let mut parts = partitions(&out).unwrap();
        assert_eq!(parts[0].to_string(), "rank=10");
        parts.sort();
        let shown: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
        assert_eq!(shown, ["rank=NULL", "rank=2", "rank=10"]);
    }
}
