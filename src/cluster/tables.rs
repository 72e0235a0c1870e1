//! The tables a cluster plan cannot name by path alone. Listing tables (every CUPTI kind and
//! side table) and empty tables travel in Ballista's plans as they are; `cpu_event` and
//! `cpu_trace` are providers of ours, so the client registers them wrapped with their
//! [`Recipe`] (which windows, which trace files, which partition values), the logical codec
//! ships the recipe as JSON, and the scheduler rebuilds the catalog's own providers from it.
//!
//! In: a registered catalog and its [`Window`]. Out: `cpu_event` and `cpu_trace` replaced by
//! [`Shipped`] wrappers that answer the same.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::catalog::cpu_trace::{cpu_event_schema, parse_cpu_trace_with_base};
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

    /// The partition fields `cpu_event` and `cpu_trace` end with.
    fn partition_fields(&self) -> Vec<Field> {
        self.partitions
            .iter()
            .map(|(name, int)| {
                let ty = if *int {
                    DataType::Int64
                } else {
                    DataType::Utf8
                };
                Field::new(name, ty, false)
            })
            .collect()
    }

    /// The windows' CPU traces (`cpu_event`'s sources, in order), and per window its
    /// position among them.
    fn sources(&self) -> DfResult<(Vec<CpuTraceSource>, Vec<CpuTraceWindow>)> {
        let fields = self.partition_fields();
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
        Ok((sources, traces))
    }

    /// The catalog's two providers, built as `catalog::register_window` builds them.
    pub fn providers(self: &Arc<Self>) -> DfResult<(Arc<Shipped>, Arc<Shipped>)> {
        let fields = self.partition_fields();
        let (sources, traces) = self.sources()?;
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
        match self.table {
            CpuTable::CpuEvent => {
                let traces = self.recipe.sources()?.0.len();
                let input = super::convert::item_scan(traces)?;
                Ok(Arc::new(CpuEventExec::new(
                    self.recipe.clone(),
                    projection.cloned(),
                    input,
                )?))
            }
            CpuTable::CpuTrace => self.inner.scan(state, projection, filters, limit).await,
        }
    }
}

/// The rows of `cpu_event` a batch holds at most: the traces' text reaches the client in
/// pieces well under Ballista's 16 MB message limit.
const CPU_EVENT_BATCH_ROWS: usize = 8192;

/// `cpu_event` on the cluster: per input row `i` (an item scan of the recipe's traces),
/// the executor running the task parses trace `i` itself; the plan carries the recipe
/// (paths), never the events.
#[derive(Debug)]
pub struct CpuEventExec {
    pub recipe: Arc<Recipe>,
    pub projection: Option<Vec<usize>>,
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl CpuEventExec {
    pub fn new(
        recipe: Arc<Recipe>,
        projection: Option<Vec<usize>>,
        input: Arc<dyn ExecutionPlan>,
    ) -> DfResult<Self> {
        let schema = match &projection {
            Some(p) => Arc::new(table_schema(&recipe).project(p)?),
            None => table_schema(&recipe),
        };
        let partitions = input.properties().output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(CpuEventExec {
            recipe,
            projection,
            input,
            properties: Arc::new(properties),
        })
    }
}

/// `cpu_event`'s columns: the event columns, then the partition columns.
fn table_schema(recipe: &Recipe) -> SchemaRef {
    let mut fields: Vec<Field> = cpu_event_schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.extend(recipe.partition_fields());
    Arc::new(Schema::new(fields))
}

/// Trace `source`'s events as `cpu_event` rows (projected), in batches of at most
/// [`CPU_EVENT_BATCH_ROWS`] whose text columns hold only their own rows' text.
fn read_source(
    source: &CpuTraceSource,
    schema: &SchemaRef,
    projection: Option<&Vec<usize>>,
) -> DfResult<Vec<RecordBatch>> {
    let (events, _base) =
        parse_cpu_trace_with_base(&source.path).map_err(|e| DataFusionError::External(e.into()))?;
    let mut columns: Vec<ArrayRef> = events.columns().to_vec();
    for value in &source.partition_values {
        columns.push(value.to_array_of_size(events.num_rows())?);
    }
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let batch = match projection {
        Some(p) => batch.project(p)?,
        None => batch,
    };
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < batch.num_rows() {
        let len = CPU_EVENT_BATCH_ROWS.min(batch.num_rows() - offset);
        let piece = batch.slice(offset, len);
        // A slice of a string view column keeps the whole trace's text buffers, which
        // Arrow IPC would send with every piece: compact each piece's text.
        let columns = piece
            .columns()
            .iter()
            .map(|c| match c.as_string_view_opt() {
                Some(views) => Arc::new(views.gc()) as ArrayRef,
                None => c.clone(),
            })
            .collect();
        out.push(RecordBatch::try_new(piece.schema(), columns)?);
        offset += len;
    }
    Ok(out)
}

impl DisplayAs for CpuEventExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "CpuEventExec: windows={} projection={:?}",
            self.recipe.windows.len(),
            self.projection
        )
    }
}

impl ExecutionPlan for CpuEventExec {
    fn name(&self) -> &str {
        "CpuEventExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let input = crate::engine::one_input(self.name(), children)?;
        Ok(Arc::new(CpuEventExec::new(
            self.recipe.clone(),
            self.projection.clone(),
            input,
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let (sources, _) = self.recipe.sources()?;
        let sources = Arc::new(sources);
        let table = table_schema(&self.recipe);
        let projection = self.projection.clone();
        let schema = self.schema();
        let input = self.input.execute(partition, context)?;
        let rows = input
            .map(|batch| batch.and_then(|b| super::convert::items(&b)))
            .map_ok(|items| futures::stream::iter(items.into_iter().map(Ok::<_, DataFusionError>)))
            .try_flatten()
            .and_then(move |i| {
                let (sources, table, projection) =
                    (sources.clone(), table.clone(), projection.clone());
                async move {
                    let source = sources.get(i).ok_or_else(|| {
                        DataFusionError::Internal(format!("cpu_event: no trace {i}"))
                    })?;
                    let path = source.path.clone();
                    let source = source.clone();
                    let batches = tokio::task::spawn_blocking(move || {
                        read_source(&source, &table, projection.as_ref())
                    })
                    .await
                    .map_err(|e| DataFusionError::Internal(format!("{}: {e}", path.display())))??;
                    Ok(futures::stream::iter(batches.into_iter().map(Ok)))
                }
            })
            .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, rows)))
    }
}

/// The executor's end of [`CpuEventExec`]'s trip through the physical codec.
pub fn encode_exec(exec: &CpuEventExec) -> DfResult<Vec<u8>> {
    serde_json::to_vec(&(exec.recipe.as_ref(), &exec.projection))
        .map_err(|e| DataFusionError::External(e.into()))
}

pub fn decode_exec(bytes: &[u8], input: Arc<dyn ExecutionPlan>) -> DfResult<CpuEventExec> {
    let (recipe, projection): (Recipe, Option<Vec<usize>>) =
        serde_json::from_slice(bytes).map_err(|e| DataFusionError::External(e.into()))?;
    CpuEventExec::new(Arc::new(recipe), projection, input)
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
