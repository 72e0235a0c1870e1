//! Scalar functions the `sql/export/` plans call where SQL has no word for the reference's
//! Python: `chrome_tid` (its `_export_tid`) and `chrome_hex` (`hex()`). How values are
//! written (lists, annotation spreads, names) is the sinks' business, not these functions'.
//!
//! `pftrace_hw_queue(lane)` looks a lane's hardware-queue iid up in `pftrace_lane`'s rows,
//! given once they are computed: as a join, the lookup would make the render stages lose
//! their event_id order (DataFusion builds its hash table on the wide side).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
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
        hw_queue_udf(HashMap::new()),
    ]
}

/// `pftrace_hw_queue(lane)`: the iid of the lane in `iids` (lane -> pftrace_lane.iid); a
/// lane without one is an error (before the lanes are known, every lane).
pub fn hw_queue_udf(iids: HashMap<Option<i64>, i64>) -> ScalarUDF {
    create_udf(
        "pftrace_hw_queue",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let lanes = arrays[0].as_primitive::<Int64Type>();
            let out: Int64Array = (0..lanes.len())
                .map(|i| {
                    let lane = lanes.is_valid(i).then(|| lanes.value(i));
                    iids.get(&lane).copied().map(Some).ok_or_else(|| {
                        DataFusionError::Execution(format!(
                            "pftrace_hw_queue: lane {lane:?} is not among pftrace_lane's lanes"
                        ))
                    })
                })
                .collect::<DfResult<_>>()?;
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hw_queue_maps_each_known_lane_and_refuses_an_unknown_one() {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_udf(hw_queue_udf(HashMap::from([(Some(7), 100), (None, 101)])));
        let batches = ctx
            .sql("SELECT pftrace_hw_queue(lane) AS iid FROM (VALUES (7), (NULL), (7)) AS t(lane)")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let iids = batches[0].column(0).as_primitive::<Int64Type>();
        assert_eq!(iids.values().to_vec(), vec![100, 101, 100]);
        let unknown = ctx
            .sql("SELECT pftrace_hw_queue(lane) FROM (VALUES (8)) AS t(lane)")
            .await
            .unwrap()
            .collect()
            .await;
        assert!(unknown.unwrap_err().to_string().contains("lane Some(8)"));
    }
}
