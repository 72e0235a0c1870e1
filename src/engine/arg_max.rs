//! `arg_max(value, key, ...)`: per group, the text `value` of the row with the greatest keys
//! (integers compared in order, a NULL key below any number; rows with equal keys: the
//! greatest value). DuckDB's `arg_max`, with more than one key; a key ordered descending is
//! given negated: `arg_max(name, ts, -end_ts)`.
//!
//! It stands in for `last_value(value ORDER BY key, ...)`, whose accumulator keeps each
//! group's ordering as a vector of `ScalarValue`s: over the ~500 k calls of two 1 M-event
//! windows, the diff's innermost CPU op and annotation of each call took 650 ms of compute
//! in their four aggregates. Here a group is its keys in one flat vector and its value in a
//! reused `String`.
//!
//! ```text
//!   rows (group, value, ts, -end):  (7, "outer", 10, -90)  (7, "inner", 20, -50)  (8, "x", 5, -6)
//!   arg_max(value, ts, -end):       7 -> "inner"   8 -> "x"
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, StringViewBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};

/// The SQL aggregate `arg_max(value, key, ...)`.
pub fn udaf() -> AggregateUDF {
    AggregateUDF::new_from_impl(ArgMax {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArgMax {
    signature: Signature,
}

impl AggregateUDFImpl for ArgMax {
    fn name(&self) -> &str {
        "arg_max"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        if arg_types.len() < 2 {
            return Err(DataFusionError::Plan(
                "arg_max takes (value, key, ...): a text value and one or more integer keys".into(),
            ));
        }
        for (k, key) in arg_types.iter().enumerate().skip(1) {
            if !(key.is_integer() || key.is_null()) {
                return Err(DataFusionError::Plan(format!(
                    "arg_max: key {k} is {key}; the keys are integers (negate one to order it \
                     descending)"
                )));
            }
        }
        let mut types = vec![DataType::Utf8View];
        types.extend(std::iter::repeat_n(DataType::Int64, arg_types.len() - 1));
        Ok(types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8View)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        let mut fields = vec![
            Field::new("value", DataType::Utf8View, true),
            Field::new("is_set", DataType::Boolean, true),
        ];
        for k in 1..args.input_fields.len() {
            fields.push(Field::new(format!("key{k}"), DataType::Int64, true));
        }
        Ok(fields.into_iter().map(Arc::new).collect())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        Ok(Box::new(OneGroup(Groups::new(args.exprs.len() - 1))))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> DfResult<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups::new(args.exprs.len() - 1)))
    }
}

/// Each group's greatest keys so far (flat, `width` a group) and their row's value.
#[derive(Debug)]
struct Groups {
    width: usize,
    keys: Vec<Option<i64>>,
    set: Vec<bool>,
    values: Vec<Option<String>>,
    text_bytes: usize,
}

impl Groups {
    fn new(width: usize) -> Groups {
        Groups {
            width,
            keys: Vec::new(),
            set: Vec::new(),
            values: Vec::new(),
            text_bytes: 0,
        }
    }

    fn resize(&mut self, groups: usize) {
        self.keys.resize(groups * self.width, None);
        self.set.resize(groups, false);
        self.values.resize(groups, None);
    }

    /// Fold rows in: `value`, then the keys; a row counts where `counts` says so.
    fn fold(
        &mut self,
        value: &ArrayRef,
        keys: &[ArrayRef],
        groups: &[usize],
        counts: impl Fn(usize) -> bool,
        total_groups: usize,
    ) -> DfResult<()> {
        self.resize(total_groups);
        let value = cast(value, &DataType::Utf8View)?;
        let value = value.as_string_view();
        let keys: Vec<Int64Array> = (keys.iter())
            .map(|k| {
                Ok(cast(k, &DataType::Int64)?
                    .as_primitive::<Int64Type>()
                    .clone())
            })
            .collect::<DfResult<_>>()?;
        let key_of = |k: &Int64Array, row: usize| k.is_valid(row).then(|| k.value(row));
        for (row, &g) in groups.iter().enumerate() {
            if !counts(row) {
                continue;
            }
            let held = &self.keys[g * self.width..(g + 1) * self.width];
            let order = if self.set[g] {
                let by_keys = (keys.iter().zip(held))
                    .map(|(k, h)| key_of(k, row).cmp(h))
                    .find(|o| o.is_ne());
                by_keys.unwrap_or_else(|| {
                    let new = value.is_valid(row).then(|| value.value(row));
                    new.cmp(&self.values[g].as_deref())
                })
            } else {
                std::cmp::Ordering::Greater
            };
            if order.is_gt() {
                for (k, key) in keys.iter().enumerate() {
                    self.keys[g * self.width + k] = key_of(key, row);
                }
                self.set[g] = true;
                let held = &mut self.values[g];
                self.text_bytes -= held.as_ref().map_or(0, String::capacity);
                match (value.is_valid(row), held.as_mut()) {
                    (false, _) => *held = None,
                    (true, Some(text)) => {
                        text.clear();
                        text.push_str(value.value(row));
                    }
                    (true, None) => *held = Some(value.value(row).to_string()),
                }
                self.text_bytes += held.as_ref().map_or(0, String::capacity);
            }
        }
        Ok(())
    }

    /// The first groups `emit_to` names, taken out: their values, set flags and keys.
    fn take(&mut self, emit_to: EmitTo) -> (Vec<Option<String>>, Vec<bool>, Vec<Option<i64>>) {
        let values = emit_to.take_needed(&mut self.values);
        let set = emit_to.take_needed(&mut self.set);
        let keys = match emit_to {
            EmitTo::All => std::mem::take(&mut self.keys),
            EmitTo::First(n) => self.keys.drain(..n * self.width).collect(),
        };
        self.text_bytes = self.values.iter().flatten().map(String::capacity).sum();
        (values, set, keys)
    }
}

fn text_array(values: &[Option<String>]) -> ArrayRef {
    let mut builder = StringViewBuilder::with_capacity(values.len());
    for value in values {
        builder.append_option(value.as_deref());
    }
    Arc::new(builder.finish())
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> DfResult<()> {
        let counts = |row: usize| opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        self.fold(
            &values[0],
            &values[1..],
            group_indices,
            counts,
            total_num_groups,
        )
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> DfResult<ArrayRef> {
        Ok(text_array(&self.take(emit_to).0))
    }

    fn state(&mut self, emit_to: EmitTo) -> DfResult<Vec<ArrayRef>> {
        let (values, set, keys) = self.take(emit_to);
        let mut state = vec![text_array(&values)];
        state.push(Arc::new(BooleanArray::from(set)));
        for k in 0..self.width {
            let column: Int64Array = keys.iter().skip(k).step_by(self.width).copied().collect();
            state.push(Arc::new(column));
        }
        Ok(state)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> DfResult<()> {
        let set = values[1].as_boolean();
        let counts = |row: usize| set.is_valid(row) && set.value(row);
        self.fold(
            &values[0],
            &values[2..],
            group_indices,
            counts,
            total_num_groups,
        )
    }

    /// Each row as a group of its own (when the partial aggregate finds few rows per group).
    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> DfResult<Vec<ArrayRef>> {
        let rows = values[0].len();
        let set: BooleanArray = (0..rows)
            .map(|row| Some(opt_filter.is_none_or(|f| f.is_valid(row) && f.value(row))))
            .collect();
        let mut state = vec![cast(&values[0], &DataType::Utf8View)?, Arc::new(set)];
        for key in &values[1..] {
            state.push(cast(key, &DataType::Int64)?);
        }
        Ok(state)
    }

    fn size(&self) -> usize {
        self.keys.capacity() * size_of::<Option<i64>>()
            + self.set.capacity()
            + self.values.capacity() * size_of::<Option<String>>()
            + self.text_bytes
    }
}

/// One group, for where DataFusion asks for a plain accumulator.
#[derive(Debug)]
struct OneGroup(Groups);

impl Accumulator for OneGroup {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        let groups = vec![0; values[0].len()];
        GroupsAccumulator::update_batch(&mut self.0, values, &groups, None, 1)
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        self.0.resize(1);
        Ok(ScalarValue::Utf8View(self.0.values[0].clone()))
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        self.0.resize(1);
        let mut state = vec![
            ScalarValue::Utf8View(self.0.values[0].clone()),
            ScalarValue::Boolean(Some(self.0.set[0])),
        ];
        state.extend(self.0.keys.iter().map(|k| ScalarValue::Int64(*k)));
        Ok(state)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        let groups = vec![0; states[0].len()];
        GroupsAccumulator::merge_batch(&mut self.0, states, &groups, 1)
    }

    fn size(&self) -> usize {
        size_of::<Self>() + GroupsAccumulator::size(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;
    use datafusion::prelude::{SessionConfig, SessionContext};

    /// `sql`'s rows of (group, text), on `partitions` partitions.
    /// With more than one partition, the partial aggregate soon gives up grouping and
    /// passes each row on as a state of its own (`convert_to_state`).
    async fn rows(sql: &str, partitions: usize) -> Vec<(i64, Option<String>)> {
        let mut config =
            (SessionConfig::new().with_target_partitions(partitions)).with_batch_size(512);
        let execution = &mut config.options_mut().execution;
        execution.skip_partial_aggregation_probe_rows_threshold = 100;
        execution.skip_partial_aggregation_probe_ratio_threshold = 0.01;
        let ctx = SessionContext::new_with_config(config);
        ctx.register_udaf(super::udaf());
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let mut rows = Vec::new();
        for batch in batches {
            let g = batch.column(0).as_primitive::<Int64Type>();
            let v = batch.column(1).as_string_view();
            for row in 0..batch.num_rows() {
                let text = v.is_valid(row).then(|| v.value(row).to_string());
                rows.push((g.value(row), text));
            }
        }
        rows
    }

    #[tokio::test]
    async fn each_group_takes_the_value_of_its_greatest_keys() {
        // the figure's rows, then: a tie on the keys, a NULL key, a NULL value, the second
        // key deciding
        let sql = "SELECT g, arg_max(v, ts, -end_ts) FROM (VALUES
            (7, 'outer', 10, 90), (7, 'inner', 20, 50), (8, 'x', 5, 6),
            (9, 'b', 1, 1), (9, 'a', 1, 1),
            (10, 'null ts', NULL, 1), (10, 'ts', 0, 1),
            (11, NULL, 3, 1), (11, 'earlier', 2, 1),
            (12, 'wider', 4, 9), (12, 'narrower', 4, 2)) AS t(g, v, ts, end_ts)
            GROUP BY g ORDER BY g";
        let text = |v: &str| Some(v.to_string());
        let expected = vec![
            (7, text("inner")),
            (8, text("x")),
            (9, text("b")),
            (10, text("ts")),
            (11, None),
            (12, text("narrower")),
        ];
        assert_eq!(rows(sql, 1).await, expected);
    }

    #[tokio::test]
    async fn partial_and_final_aggregates_agree_with_last_value() {
        // many groups with ties over several partitions, so that partial states are merged;
        // the last key breaks every tie, as the value does
        let data = "(SELECT value % 997 AS g, CAST(value AS VARCHAR) AS v,
            (value * 7919) % 101 AS ts, (value * 104729) % 13 AS end_ts, value AS n
            FROM generate_series(1, 20000))";
        for partitions in [1, 4] {
            let ours =
                format!("SELECT g, arg_max(v, ts, -end_ts, n) FROM {data} GROUP BY g ORDER BY g");
            let theirs = format!(
                "SELECT g, last_value(v ORDER BY ts, end_ts DESC, n) FROM {data}
                 GROUP BY g ORDER BY g"
            );
            let ours = rows(&ours, partitions).await;
            assert_eq!(ours.len(), 997);
            assert_eq!(ours, rows(&theirs, partitions).await);
        }
    }

    #[tokio::test]
    async fn a_text_key_is_refused_when_planned() {
        let ctx = SessionContext::new();
        ctx.register_udaf(super::udaf());
        let sql = "SELECT arg_max(v, v) FROM (VALUES ('a')) AS t(v)";
        let err = ctx.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains("arg_max: key 1 is Utf8"), "{err}");
    }

    #[tokio::test]
    async fn without_groups_it_is_one_value() {
        let sql =
            "SELECT 0 AS g, arg_max(v, k) FROM (VALUES ('a', 2), ('b', 3), ('c', 1)) AS t(v, k)";
        assert_eq!(rows(sql, 1).await, vec![(0, Some("b".to_string()))]);
    }
}
