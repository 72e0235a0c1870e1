//! The tables a cluster plan cannot name by path alone. Listing tables (every CUPTI kind and
//! side table) and empty tables travel in Ballista's plans as they are; `cpu_event` and
//! `cpu_trace` are providers of ours, so the client registers them wrapped with their
//! [`Recipe`] (which windows, which trace files, which partition values), the logical codec
//! ships the recipe as JSON, and the scheduler rebuilds the catalog's own providers from it.
//!
//! In: a registered catalog and its [`Window`]. Out: `cpu_event` and `cpu_trace` replaced by
//! [`Shipped`] wrappers that answer the same.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::catalog::cpu_trace::cpu_event_schema;
use crate::catalog::{CpuEventTable, CpuTraceSource, CpuTraceTable, CpuTraceWindow};
use crate::window::Window;
use crate::Result;

/// Which of the two CPU tables a [`Shipped`] provider is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuTable {
    CpuEvent,
    CpuTrace,
}

/// Everything `cpu_event` and `cpu_trace` are built from: the partition columns, and per
/// window its directory, its CPU trace (if any) and its partition values as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipe {
    /// Partition columns: name and whether they are integers (else text).
    pub partitions: Vec<(String, bool)>,
    pub windows: Vec<RecipeWindow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecipeWindow {
    pub dir: PathBuf,
    pub cpu_trace: Option<PathBuf>,
    pub values: Vec<String>,
}

impl Recipe {
    /// The recipe of `window`, whose partition column types are those `cpu_event` was
    /// registered with (`cpu_schema`: the event columns, then the partition columns).
    fn of(window: &Window, cpu_schema: &SchemaRef) -> Recipe {
        let skip = cpu_event_schema().fields().len();
        let partitions = cpu_schema
            .fields()
            .iter()
            .skip(skip)
            .map(|f| (f.name().clone(), f.data_type() == &DataType::Int64))
            .collect();
        let windows = window
            .windows
            .iter()
            .map(|w| RecipeWindow {
                dir: absolute(&w.path),
                cpu_trace: w.cpu_trace.as_deref().map(absolute),
                values: w.partitions.iter().map(|(_, v)| v.clone()).collect(),
            })
            .collect();
        Recipe {
            partitions,
            windows,
        }
    }

    /// The catalog's two providers, built as `catalog::register_window` builds them.
    pub fn providers(self: &Arc<Self>) -> DfResult<(Arc<Shipped>, Arc<Shipped>)> {
        let fields: Vec<Field> = self
            .partitions
            .iter()
            .map(|(name, int)| {
                let ty = if *int {
                    DataType::Int64
                } else {
                    DataType::Utf8
                };
                Field::new(name, ty, false)
            })
            .collect();
        let mut sources = Vec::new();
        let mut traces = Vec::with_capacity(self.windows.len());
        for w in &self.windows {
            let partition_values = w
                .values
                .iter()
                .zip(&fields)
                .map(|(v, f)| ScalarValue::try_from_string(v.clone(), f.data_type()))
                .collect::<DfResult<Vec<_>>>()?;
            let source = w.cpu_trace.clone().map(|path| {
                sources.push(CpuTraceSource {
                    path,
                    partition_values: partition_values.clone(),
                });
                sources.len() - 1
            });
            traces.push(CpuTraceWindow {
                dir: w.dir.clone(),
                source,
                partition_values,
            });
        }
        let events = Arc::new(CpuEventTable::new(sources, &fields));
        let trace = Arc::new(CpuTraceTable::new(events.clone(), traces, &fields));
        let shipped = |table, inner: Arc<dyn TableProvider>| {
            Arc::new(Shipped {
                recipe: self.clone(),
                table,
                inner,
            })
        };
        Ok((
            shipped(CpuTable::CpuEvent, events),
            shipped(CpuTable::CpuTrace, trace),
        ))
    }
}

fn absolute(path: &std::path::Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `cpu_event` or `cpu_trace` with the recipe it was built from: it answers as the catalog's
/// provider does, and the logical codec can ship it.
#[derive(Debug)]
pub struct Shipped {
    pub recipe: Arc<Recipe>,
    pub table: CpuTable,
    inner: Arc<dyn TableProvider>,
}

#[async_trait]
impl TableProvider for Shipped {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.inner.scan(state, projection, filters, limit).await
    }
}

/// Replace the `cpu_event` and `cpu_trace` that `catalog::register_window` registered in
/// `ctx` with shippable ones (before the views are created: they capture the providers).
pub async fn ship_cpu_tables(ctx: &SessionContext, window: &Window) -> Result<()> {
    let schema = ctx.table_provider("cpu_event").await?.schema();
    let recipe = Arc::new(Recipe::of(window, &schema));
    let (events, trace) = recipe.providers()?;
    ctx.deregister_table("cpu_event")?;
    ctx.deregister_table("cpu_trace")?;
    ctx.register_table("cpu_event", events)?;
    ctx.register_table("cpu_trace", trace)?;
    Ok(())
}

/// A recipe's JSON, as the logical codec ships it.
pub fn encode(table: CpuTable, recipe: &Recipe) -> DfResult<Vec<u8>> {
    serde_json::to_vec(&(table, recipe)).map_err(|e| DataFusionError::External(e.into()))
}

/// The provider [`encode`]'s bytes describe.
pub fn decode(bytes: &[u8]) -> DfResult<Arc<Shipped>> {
    let (table, recipe): (CpuTable, Recipe) =
        serde_json::from_slice(bytes).map_err(|e| DataFusionError::External(e.into()))?;
    let (events, trace) = Arc::new(recipe).providers()?;
    Ok(match table {
        CpuTable::CpuEvent => events,
        CpuTable::CpuTrace => trace,
    })
}
