//! Stage `load`, cells: SQLite's dynamically typed cells into Arrow builders of a table's
//! declared column types (an integer column reads a whole REAL or a numeric TEXT as its
//! integer; a text column reads any cell as text, non-UTF-8 lossily).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Builder, StringBuilder};
use rusqlite::types::ValueRef;

use super::source::Ty;

/// One column's values as they are read, in its declared type.
pub(super) enum Builder {
    Int(Int64Builder),
    Text(StringBuilder),
}

impl Builder {
    pub(super) fn new(ty: Ty) -> Self {
        match ty {
            Ty::Int => Builder::Int(Int64Builder::new()),
            Ty::Text => Builder::Text(StringBuilder::new()),
        }
    }

    pub(super) fn with_capacity(ty: Ty, rows: usize) -> Self {
        match ty {
            Ty::Int => Builder::Int(Int64Builder::with_capacity(rows)),
            Ty::Text => Builder::Text(StringBuilder::with_capacity(rows, rows * 16)),
        }
    }

    /// SQLite is dynamically typed: a cell of any storage class goes in, converted or null
    /// (an integer in an integer column, the common case, is the first arm).
    pub(super) fn push(&mut self, v: ValueRef<'_>) {
        match self {
            Builder::Int(b) => b.append_option(match v {
                ValueRef::Integer(i) => Some(i),
                ValueRef::Real(f) if f.is_finite() && f.fract() == 0.0 => Some(f as i64),
                ValueRef::Text(t) => std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.trim().parse().ok()),
                _ => None,
            }),
            Builder::Text(b) => match v {
                ValueRef::Null => b.append_null(),
                ValueRef::Integer(i) => b.append_value(i.to_string()),
                ValueRef::Real(f) => b.append_value(f.to_string()),
                ValueRef::Text(t) | ValueRef::Blob(t) => b.append_value(String::from_utf8_lossy(t)),
            },
        }
    }

    pub(super) fn finish(self) -> ArrayRef {
        match self {
            Builder::Int(mut b) => Arc::new(b.finish()),
            Builder::Text(mut b) => Arc::new(b.finish()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array, StringArray};

    fn cells(ty: Ty, values: &[ValueRef<'_>]) -> ArrayRef {
        let mut b = Builder::new(ty);
        for v in values {
            b.push(*v);
        }
        b.finish()
    }

    #[test]
    fn sqlite_cells_of_any_storage_class_convert_or_read_as_null() {
        let ints = cells(
            Ty::Int,
            &[
                ValueRef::Integer(7),
                ValueRef::Real(3.0),
                ValueRef::Real(2.5),
                ValueRef::Text(b" 12 "),
                ValueRef::Text(b"soon"),
                ValueRef::Blob(b"\x01"),
                ValueRef::Null,
            ],
        );
        let ints = ints.as_any().downcast_ref::<Int64Array>().unwrap();
        let got: Vec<Option<i64>> = ints.iter().collect();
        assert_eq!(got, [Some(7), Some(3), None, Some(12), None, None, None]);
        let texts = cells(
            Ty::Text,
            &[
                ValueRef::Text(b"caf\xe9"),
                ValueRef::Integer(5),
                ValueRef::Null,
            ],
        );
        let texts = texts.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(texts.value(0), "caf\u{fffd}");
        assert_eq!(texts.value(1), "5");
        assert!(texts.is_null(2));
    }
}
