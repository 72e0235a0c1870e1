//! `enclosing(is_start, name) OVER (PARTITION BY .. ORDER BY ..)`: over the start and end
//! markers of a call stack in order, the name of the op each start opens inside: the last op
//! opened one level up, where a marker's level is the running count of starts less ends. One
//! pass over the markers, already in the window's order; in SQL it was a second window over
//! the starts partitioned by level (`last_seen`), 1.7 s for the 1.7 M markers of a 1 M-event
//! window.
//!
//! ```text
//!   marker:     A(  B(  )B  C(  D(  )D  )C  )A
//!   level:      1   2   1   2   3   2   1   0
//!   enclosing:  ∅   A   ∅   A   C   ∅   ∅   ∅      (ends: always ∅)
//! ```

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl,
};

/// The SQL window function `enclosing(is_start, name)`.
pub fn udwf() -> WindowUDF {
    WindowUDF::new_from_impl(Enclosing {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Enclosing {
    signature: Signature,
}

impl WindowUDFImpl for Enclosing {
    fn name(&self) -> &str {
        "enclosing"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _args: PartitionEvaluatorArgs,
    ) -> DfResult<Box<dyn PartitionEvaluator>> {
        Ok(Box::<Stack>::default())
    }

    fn field(&self, args: WindowUDFFieldArgs) -> DfResult<FieldRef> {
        let input = args
            .get_input_field(1)
            .ok_or_else(|| DataFusionError::Plan("enclosing takes (is_start, name)".to_string()))?;
        Ok(Field::new(args.name(), input.data_type().clone(), true).into())
    }
}

/// The running level and, per level, the last op opened there: row by row across batches
/// (so the planner can stream it), or a partition at once.
#[derive(Debug, Default)]
struct Stack {
    level: i64,
    opened: HashMap<i64, ScalarValue>,
}

/// A start's level (after it) and whether it is one; None for an end or a NULL marker.
pub(super) fn step(level: &mut i64, is_start: &ArrayRef, row: usize) -> Option<i64> {
    if !is_start.is_valid(row) {
        return None;
    }
    if is_start.as_boolean().value(row) {
        *level += 1;
        Some(*level)
    } else {
        *level -= 1;
        None
    }
}

impl PartitionEvaluator for Stack {
    fn supports_bounded_execution(&self) -> bool {
        true
    }

    fn evaluate(&mut self, values: &[ArrayRef], range: &Range<usize>) -> DfResult<ScalarValue> {
        // without a window frame, `range` is the row itself
        let (is_start, name, row) = (&values[0], &values[1], range.end - 1);
        let Some(level) = step(&mut self.level, is_start, row) else {
            return ScalarValue::try_from(name.data_type());
        };
        let parent = match self.opened.get(&(level - 1)) {
            Some(value) => value.clone(),
            None => ScalarValue::try_from(name.data_type())?,
        };
        self.opened
            .insert(level, ScalarValue::try_from_array(name, row)?);
        Ok(parent)
    }

    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> DfResult<ArrayRef> {
        let (is_start, name) = (&values[0], &values[1]);
        let mut level = 0;
        let mut opened: HashMap<i64, u32> = HashMap::new();
        let rows: UInt32Array = (0..num_rows)
            .map(|i| {
                let level = step(&mut level, is_start, i)?;
                let parent = opened.get(&(level - 1)).copied();
                opened.insert(level, i as u32);
                parent
            })
            .collect();
        let parents = take(name.as_ref(), &rows, None)?;
        // a taken view array still holds all of the input's text buffers (see last_seen)
        Ok(match parents.data_type() {
            DataType::Utf8View => Arc::new(parents.as_string_view().gc()),
            _ => parents,
        })
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::AsArray;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn each_start_takes_the_op_open_one_level_up_in_its_partition() {
        let ctx = SessionContext::new();
        ctx.register_udwf(super::udwf());
        // thread 1: A( B( )B C( D( )D )C )A, as in the figure; thread 2: E( )E
        let sql = "SELECT enclosing(s, n) OVER (PARTITION BY p ORDER BY t) AS parent
            FROM (VALUES (1, 1, true, 'A'), (1, 2, true, 'B'), (1, 3, false, 'B'),
              (1, 4, true, 'C'), (1, 5, true, 'D'), (1, 6, false, 'D'), (1, 7, false, 'C'),
              (1, 8, false, 'A'), (2, 1, true, 'E'), (2, 2, false, 'E')) AS v(p, t, s, n)
            ORDER BY p, t";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let parents: Vec<Option<String>> = (batches.iter())
            .flat_map(|b| {
                let column = datafusion::arrow::compute::cast(
                    b.column(0),
                    &datafusion::arrow::datatypes::DataType::Utf8,
                )
                .unwrap();
                (column.as_string::<i32>().iter())
                    .map(|v| v.map(str::to_string))
                    .collect::<Vec<_>>()
            })
            .collect();
        let want = [
            None,
            Some("A"),
            None,
            Some("A"),
            Some("C"),
            None,
            None,
            None,
            None,
            None,
        ];
        assert_eq!(parents, want.map(|v| v.map(str::to_string)));
    }
}
