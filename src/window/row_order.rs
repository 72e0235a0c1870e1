//! The row order a GPU activity table is written in: each stream's rows in time order
//! ([`STREAM_ROW_ORDER`]). Writers do not sort (the export numbers events in file order);
//! they check the order of the rows they write, batch by batch, and claim it in the file's
//! key-value metadata only when it held for every row. The doctor checks a file the same way.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int64Type, Schema};
use parquet::file::metadata::KeyValue;

pub use crate::engine::stream_order::{ROW_ORDER_KEY, STREAM_ROW_ORDER};

/// A stream's key: (device_id, context_id, stream_id).
type Stream = [Option<i64>; 3];
/// A row's time, compared as the engine sorts ascending: nulls after every value.
type Time = [(bool, i64); 2];

/// Watches rows go by and remembers whether each stream's rows came in time order.
#[derive(Debug, Default)]
pub struct StreamOrderCheck {
    last: HashMap<Stream, Time>,
    rows: u64,
    /// The first row that went back in time on its stream: (row, stream).
    pub broken_at: Option<(u64, Stream)>,
}

const GROUPS: [&str; 3] = ["device_id", "context_id", "stream_id"];
const TIMES: [&str; 2] = ["start_ns", "end_ns"];

impl StreamOrderCheck {
    /// A check for a table with the claim's columns (all Int64), None for other tables.
    pub fn for_schema(schema: &Schema) -> Option<Self> {
        let has = |n: &str| {
            schema
                .field_with_name(n)
                .is_ok_and(|f| *f.data_type() == DataType::Int64)
        };
        (GROUPS.iter().chain(&TIMES).all(|n| has(n))).then(Self::default)
    }

    /// The file's key-value entry that claims the order, when every row so far kept it.
    pub fn claim(&self) -> Option<KeyValue> {
        let entry = KeyValue::new(ROW_ORDER_KEY.to_string(), STREAM_ROW_ORDER.to_string());
        self.holds().then_some(entry)
    }

    /// Look at the next rows (a batch with the claim's columns).
    pub fn observe(&mut self, batch: &RecordBatch) {
        let column = |name: &str| -> Option<&Int64Array> {
            batch.column_by_name(name)?.as_primitive_opt::<Int64Type>()
        };
        let (Some(d), Some(c), Some(s), Some(start), Some(end)) = (
            column(GROUPS[0]),
            column(GROUPS[1]),
            column(GROUPS[2]),
            column(TIMES[0]),
            column(TIMES[1]),
        ) else {
            self.broken_at.get_or_insert((self.rows, [None; 3]));
            return;
        };
        let value = |a: &Int64Array, i: usize| a.is_valid(i).then(|| a.value(i));
        let time = |a: &Int64Array, i: usize| match value(a, i) {
            Some(v) => (false, v),
            None => (true, 0),
        };
        for i in 0..batch.num_rows() {
            let row = self.rows + i as u64;
            if self.broken_at.is_some() {
                break;
            }
            let stream = [value(d, i), value(c, i), value(s, i)];
            let now = [time(start, i), time(end, i)];
            match self.last.insert(stream, now) {
                Some(before) if before > now => self.broken_at = Some((row, stream)),
                _ => {}
            }
        }
        self.rows += batch.num_rows() as u64;
    }

    /// Whether every row so far came in time order on its stream.
    pub fn holds(&self) -> bool {
        self.broken_at.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::ArrayRef;
    use datafusion::arrow::datatypes::Field;
    use std::sync::Arc;

    fn batch(stream: &[i64], start: &[Option<i64>]) -> RecordBatch {
        let n = stream.len();
        let names = ["device_id", "context_id", "stream_id", "start_ns", "end_ns"];
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![0; n])),
            Arc::new(Int64Array::from(vec![1; n])),
            Arc::new(Int64Array::from(stream.to_vec())),
            Arc::new(Int64Array::from(start.to_vec())),
            Arc::new(Int64Array::from(vec![100; n])),
        ];
        let fields: Vec<Field> = (names.iter())
            .map(|n| Field::new(*n, DataType::Int64, true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    #[test]
    fn streams_interleaved_in_time_order_each_hold_and_one_going_back_is_found() {
        let mut check = StreamOrderCheck::default();
        check.observe(&batch(&[7, 3, 7], &[Some(10), Some(1), Some(20)]));
        check.observe(&batch(&[3, 7], &[Some(2), None]));
        assert!(check.holds(), "a null start sorts last: still in order");
        check.observe(&batch(&[3, 3], &[Some(5), Some(4)]));
        assert_eq!(check.broken_at, Some((6, [Some(0), Some(1), Some(3)])));
        assert!(!check.holds());
    }

    #[test]
    fn only_tables_with_every_claimed_column_are_checked() {
        let b = batch(&[1], &[Some(1)]);
        assert!(StreamOrderCheck::for_schema(&b.schema()).is_some());
        let without_device = b.schema().project(&[1, 2, 3, 4]).unwrap();
        assert!(StreamOrderCheck::for_schema(&without_device).is_none());
    }
}
