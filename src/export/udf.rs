//! Scalar functions the `sql/export/` plans call where SQL has no word for the reference's
//! Python: `chrome_tid` (its `_export_tid`), `chrome_hex` (`hex()`), `ns_of_us` (its
//! `np.round(us * 1000.0).astype(np.int64)`), `us_as_read` (its `float()` of a CPU-trace µs
//! text), and `drawn_lane`, the one definition of the
//! lane a GPU op is drawn on. How values are
//! written (lists, annotation spreads, names) is the sinks' business, not these functions'.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array, Int64Array, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
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
            "ns_of_us",
            vec![DataType::Float64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(ns_of_us),
        ),
        create_udf(
            "us_as_read",
            vec![DataType::Int64],
            DataType::Float64,
            Volatility::Immutable,
            Arc::new(us_as_read),
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

/// `ns_of_us(us)`: µs back to ns the way the reference does it, `np.round(us * 1000.0)`
/// cast to int64: the product in float, rounded half to even (SQL's `round` rounds half away
/// from zero, which differs on the ties a product above 2^51 can hit).
fn ns_of_us(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<Float64Type>();
    let out: Int64Array = input.unary(|us| (us * 1000.0).round_ties_even() as i64);
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// `us_as_read(ns)`: the float a JSON reader makes of the µs text of `ns` (`1234.567` for
/// 1 234 567 ns): ns / 1000 rounded once, to the nearest double. `ns as f64 / 1000.0`
/// rounds twice once |ns| passes 2^53 (104 days) and can land one ulp off, so those are read
/// from their decimal text as the reference's parser reads them.
fn us_as_read(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<Int64Type>();
    let out: Float64Array = input.unary(read_us);
    Ok(ColumnarValue::Array(Arc::new(out)))
}

fn read_us(ns: i64) -> f64 {
    let magnitude = ns.unsigned_abs();
    if magnitude < 1 << 53 {
        return ns as f64 / 1000.0; // exact ns, one rounding
    }
    let sign = if ns < 0 { "-" } else { "" };
    let text = format!("{sign}{}.{:03}", magnitude / 1000, magnitude % 1000);
    text.parse().expect("a decimal number")
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
    fn ns_of_us_rounds_the_float_product_half_to_even_as_numpy_does() {
        // (µs, numpy's int64(np.round(us * 1000.0)), as Python printed them)
        let cases = [
            (0.0, 0),
            (0.0015, 2), // 1.5 ns: a tie, to the even 2
            (0.0025, 2), // 2.5 ns: a tie, to the even 2
            (1234.567, 1_234_567),
            // 3377699720527872.5 ns, a tie SQL's round would take up to ...873
            (3377699720527.8726, 3_377_699_720_527_872),
        ];
        let us: Vec<f64> = cases.iter().map(|c| c.0).collect();
        let arg = ColumnarValue::Array(Arc::new(Float64Array::from(us)));
        let ColumnarValue::Array(out) = ns_of_us(&[arg]).unwrap() else {
            panic!("an array of ns")
        };
        let got: Vec<i64> = out.as_primitive::<Int64Type>().values().to_vec();
        let want: Vec<i64> = cases.iter().map(|c| c.1).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn us_as_read_is_the_float_parsed_from_the_decimal_text() {
        for ns in [
            0i64,
            1,
            -1_234_567,
            (1 << 53) - 1,
            1 << 53,
            182_030_920_993_190_389, // as f64 then / 1000: one ulp off
            -182_030_920_993_190_389,
            i64::MAX,
        ] {
            let sign = if ns < 0 { "-" } else { "" };
            let (whole, frac) = (ns.unsigned_abs() / 1000, ns.unsigned_abs() % 1000);
            let parsed: f64 = format!("{sign}{whole}.{frac:03}").parse().unwrap();
            assert_eq!(read_us(ns).to_bits(), parsed.to_bits(), "{ns}");
        }
        // the case that needed it: dividing the rounded ns lands elsewhere
        let ns = 182_030_920_993_190_389i64;
        assert_ne!((ns as f64 / 1000.0).to_bits(), read_us(ns).to_bits());
    }

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
