//! Scalar functions the `sql/export/` plans call where SQL has no word for the reference's
//! Python: `chrome_tid` (its `_export_tid`) and `chrome_hex` (`hex()`). How values are
//! written (lists, annotation spreads, names) is the sinks' business, not these functions'.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Int64Array, StringBuilder};
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
    ]
}

fn chrome_tid(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let input = arrays[0].as_primitive::<Int64Type>();
    let out: Int64Array = input.unary(|t| if t == i64::MIN { 0 } else { t.abs() });
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
