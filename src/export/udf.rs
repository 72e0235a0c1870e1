//! Scalar functions the `sql/export/` plans call where SQL has no word for the reference's
//! Python: `chrome_tid` (its `_export_tid`), `chrome_hex` (`hex()`), and `drawn_lane`, the
//! one definition of the lane a GPU op is drawn on. How values are
//! written (lists, annotation spreads, names) is the sinks' business, not these functions'.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};

/// Every export function, for registration in a context.
pub fn export_udfs() -> Vec<ScalarUDF> {
    vec![
        create_udf(
            "chrome_tid",
            vec![DataType::Int64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(chrome_tid),
        ),
        create_udf(
            "chrome_hex",
            vec![DataType::UInt64],
            DataType::Utf8,
            Volatility::Immutable,
            Arc::new(chrome_hex),
        ),
        create_udf(
            "drawn_lane",
            vec![DataType::Int64, DataType::Int64, DataType::Int64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(drawn_lane),
        ),
    ]
}

fn chrome_tid(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<Int64Type>();
    let out: Int64Array = input.unary(|t| if t == i64::MIN { 0 } else { t.abs() });
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// `drawn_lane(graph_node_id, logical_lane, stream_id)`: the lane a GPU op is drawn on. A
/// graphed op (graph_node_id <> 0) whose resolver lane (`logical_lane`) differs from its
/// stream is moved onto that lane; every other op stays on its stream (NULL when the stream
/// is). The reference's rule; the op was moved exactly when the result differs from its
/// stream.
fn drawn_lane(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let [node, lane, stream] = [0, 1, 2].map(|i| arrays[i].as_primitive::<Int64Type>());
    let out: Int64Array = (0..stream.len())
        .map(|i| {
            let moved = node.is_valid(i)
                && node.value(i) != 0
                && lane.is_valid(i)
                && stream.is_valid(i)
                && lane.value(i) != stream.value(i);
            match moved {
                true => Some(lane.value(i)),
                false => stream.is_valid(i).then(|| stream.value(i)),
            }
        })
        .collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

fn chrome_hex(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<UInt64Type>();
    let mut out = StringBuilder::with_capacity(input.len(), input.len() * 14);
    for v in input.iter() {
        out.append_option(v.map(|v| format!("{v:#x}")));
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_graphed_op_is_drawn_on_its_lane_only_when_the_lane_differs_from_its_stream() {
        let column = |v: Vec<Option<i64>>| ColumnarValue::Array(Arc::new(Int64Array::from(v)));
        // (graph node, lane, stream) -> drawn lane
        let cases = [
            ((Some(0), Some(5), Some(7)), Some(7)), // eager: its stream
            ((Some(1), Some(5), Some(7)), Some(5)), // graphed, another lane: moved
            ((Some(1), Some(7), Some(7)), Some(7)), // graphed, its own stream
            ((Some(1), None, Some(7)), Some(7)),    // no lane recorded
            ((None, Some(5), Some(7)), Some(7)),    // no graph node recorded
            ((Some(1), Some(5), None), None),       // no stream
        ];
        type Args = (Option<i64>, Option<i64>, Option<i64>);
        let pick =
            |f: fn(&Args) -> Option<i64>| column(cases.iter().map(|(args, _)| f(args)).collect());
        let args = [pick(|a| a.0), pick(|a| a.1), pick(|a| a.2)];
        let ColumnarValue::Array(out) = drawn_lane(&args).unwrap() else {
            panic!("an array of lanes")
        };
        let out = out.as_primitive::<Int64Type>();
        let got: Vec<Option<i64>> = out.iter().collect();
        let want: Vec<Option<i64>> = cases.iter().map(|(_, lane)| *lane).collect();
        assert_eq!(got, want);
    }
}
