//! A scalar function standing in for a join: `name(key)` is the value of `key` in a map given
//! once, after the session is set up (when the rows it comes from are computed).
//!
//! Used for `pftrace_hw_queue(lane)`, a lane's hardware-queue iid in `pftrace_lane`: as a
//! join, DataFusion builds its hash table on the wide side (the render rows) and the render
//! stages lose their event_id order, so the plan sorts 10 M rows again (aed9203).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};

/// The map behind one lookup function; a NULL key is a key.
#[derive(Clone, Debug)]
pub struct RowLookup {
    name: &'static str,
    values: Arc<OnceLock<HashMap<Option<i64>, i64>>>,
}

impl RowLookup {
    pub fn new(name: &'static str) -> Self {
        RowLookup {
            name,
            values: Arc::new(OnceLock::new()),
        }
    }

    /// The function, for registration: an error for a key the map lacks, and for every key
    /// before the map is given.
    pub fn udf(&self) -> ScalarUDF {
        let (name, values) = (self.name, self.values.clone());
        create_udf(
            name,
            vec![DataType::Int64],
            DataType::Int64,
            Volatility::Immutable,
            Arc::new(move |args: &[ColumnarValue]| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let keys = arrays[0].as_primitive::<Int64Type>();
                let not_given = HashMap::new();
                let map = values.get().unwrap_or(&not_given);
                let out: Int64Array = (0..keys.len())
                    .map(|i| {
                        let key = keys.is_valid(i).then(|| keys.value(i));
                        map.get(&key).copied().map(Some).ok_or_else(|| {
                            DataFusionError::Execution(format!("{name}: no value for {key:?}"))
                        })
                    })
                    .collect::<DfResult<_>>()?;
                Ok(ColumnarValue::Array(Arc::new(out)))
            }),
        )
    }

    /// Give the map (once; a second map is a bug in the caller).
    pub fn give(&self, map: HashMap<Option<i64>, i64>) {
        if self.values.set(map).is_err() {
            panic!("{}: its map is given once", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(ctx: &datafusion::prelude::SessionContext, sql: &str) -> DfResult<Vec<i64>> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
            .collect())
    }

    #[tokio::test]
    async fn a_lookup_maps_each_given_key_and_refuses_unknown_keys_and_an_ungiven_map() {
        let ctx = datafusion::prelude::SessionContext::new();
        let lookup = RowLookup::new("hw_queue");
        ctx.register_udf(lookup.udf());
        let query = "SELECT hw_queue(lane) FROM (VALUES (7), (NULL), (7)) AS t(lane)";
        let before = run(&ctx, query).await.unwrap_err();
        assert!(
            before
                .to_string()
                .contains("hw_queue: no value for Some(7)"),
            "{before}"
        );
        lookup.give(HashMap::from([(Some(7), 100), (None, 101)]));
        assert_eq!(run(&ctx, query).await.unwrap(), vec![100, 101, 100]);
        let unknown = run(&ctx, "SELECT hw_queue(lane) FROM (VALUES (8)) AS t(lane)")
            .await
            .unwrap_err();
        assert!(
            unknown.to_string().contains("no value for Some(8)"),
            "{unknown}"
        );
    }
}
