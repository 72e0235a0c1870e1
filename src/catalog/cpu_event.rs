//! The `cpu_event` table provider: parses the windows' Kineto CPU traces when a query first
//! scans the table, so queries that never touch CPU events never pay for the JSON. Beside it
//! `cpu_trace`, one row per window: which trace it has and the trace's `baseTimeNanoseconds`
//! (what `cpu_event` cannot show: a window without a trace, a trace without a base).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{new_empty_array, ArrayRef, Int64Builder, StringViewBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::cpu_trace::{cpu_event_schema, parse_cpu_trace_with_base};

/// One CPU trace file and the archive partition values of its window.
#[derive(Debug, Clone)]
pub struct CpuTraceSource {
    pub path: PathBuf,
    pub partition_values: Vec<ScalarValue>,
}

/// `cpu_event`: every event of every window's CPU trace.
#[derive(Debug)]
pub struct CpuEventTable {
    schema: SchemaRef,
    sources: Vec<CpuTraceSource>,
    loaded: Mutex<Option<Loaded>>,
}

/// The parsed traces: the events, and each source's `baseTimeNanoseconds`.
#[derive(Debug)]
struct Loaded {
    table: Arc<MemTable>,
    base_ns: Vec<Option<i64>>,
}

impl CpuEventTable {
    /// A table over `sources`, with `partition_fields` appended to the event columns.
    pub fn new(sources: Vec<CpuTraceSource>, partition_fields: &[Field]) -> Self {
        let mut fields: Vec<Field> = cpu_event_schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.extend(partition_fields.iter().cloned());
        CpuEventTable {
            schema: Arc::new(Schema::new(fields)),
            sources,
            loaded: Mutex::new(None),
        }
    }

    fn load(&self) -> DfResult<Arc<MemTable>> {
        self.with_loaded(|loaded| loaded.table.clone())
    }

    /// Each source's `baseTimeNanoseconds` (None when its trace has none), in source order;
    /// parses the traces if no query did yet.
    pub fn base_ns(&self) -> DfResult<Vec<Option<i64>>> {
        self.with_loaded(|loaded| loaded.base_ns.clone())
    }

    fn with_loaded<T>(&self, f: impl FnOnce(&Loaded) -> T) -> DfResult<T> {
        let mut guard = self
            .loaded
            .lock()
            .expect("cpu_event cache lock is never poisoned");
        if let Some(loaded) = guard.as_ref() {
            return Ok(f(loaded));
        }
        let mut batches = Vec::with_capacity(self.sources.len());
        let mut base_ns = Vec::with_capacity(self.sources.len());
        // An archive's traces are read side by side, as many at a time as there are cores
        // (gunzipping and splitting a trace are one thread's work each).
        let mut parsed = Vec::with_capacity(self.sources.len());
        for some in self.sources.chunks(crate::threads::cores()) {
            parsed.extend(crate::threads::on_threads(
                some.iter().collect(),
                |source| parse_cpu_trace_with_base(&source.path),
            ));
        }
        for (source, parsed) in self.sources.iter().zip(parsed) {
            let (events, base) = parsed.map_err(|e| DataFusionError::External(e.into()))?;
            let mut columns: Vec<ArrayRef> = events.columns().to_vec();
            for value in &source.partition_values {
                columns.push(value.to_array_of_size(events.num_rows())?);
            }
            batches.push(RecordBatch::try_new(self.schema.clone(), columns)?);
            base_ns.push(base);
        }
        let table = Arc::new(MemTable::try_new(self.schema.clone(), vec![batches])?);
        let loaded = Loaded { table, base_ns };
        let out = f(&loaded);
        *guard = Some(loaded);
        Ok(out)
    }
}

#[async_trait]
impl TableProvider for CpuEventTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.load()?.scan(state, projection, filters, limit).await
    }
}

/// One window of the catalog, as `cpu_trace` lists it.
#[derive(Debug, Clone)]
pub struct CpuTraceWindow {
    /// The window's directory.
    pub dir: PathBuf,
    /// Its position among the `cpu_event` sources, None when the window has no CPU trace.
    pub source: Option<usize>,
    pub partition_values: Vec<ScalarValue>,
}

/// `cpu_trace`: one row per window: `dir`, `path` (the CPU trace, NULL when none) and
/// `base_ns` (its `baseTimeNanoseconds`, NULL when it has none), then the partition columns.
/// Reading `base_ns` parses the traces, as reading `cpu_event` does (once, shared).
#[derive(Debug)]
pub struct CpuTraceTable {
    schema: SchemaRef,
    events: Arc<CpuEventTable>,
    windows: Vec<CpuTraceWindow>,
}

impl CpuTraceTable {
    pub fn new(
        events: Arc<CpuEventTable>,
        windows: Vec<CpuTraceWindow>,
        partition_fields: &[Field],
    ) -> Self {
        let mut fields = vec![
            // the window's directory
            Field::new("dir", DataType::Utf8View, false),
            // its CPU trace file, NULL when it has none
            Field::new("path", DataType::Utf8View, true),
            // the trace's baseTimeNanoseconds, NULL without a trace or without the member
            Field::new("base_ns", DataType::Int64, true),
        ];
        fields.extend(partition_fields.iter().cloned());
        CpuTraceTable {
            schema: Arc::new(Schema::new(fields)),
            events,
            windows,
        }
    }

    /// The table's rows; `base_ns` all NULL unless `with_base`.
    fn batch(&self, with_base: bool) -> DfResult<RecordBatch> {
        let any_trace = self.windows.iter().any(|w| w.source.is_some());
        let base_ns = if with_base && any_trace {
            self.events.base_ns()?
        } else {
            vec![None; self.events.sources.len()]
        };
        let mut dir = StringViewBuilder::new();
        let mut path = StringViewBuilder::new();
        let mut base = Int64Builder::new();
        for window in &self.windows {
            dir.append_value(window.dir.display().to_string());
            let source = window.source.map(|i| &self.events.sources[i]);
            path.append_option(source.map(|s| s.path.display().to_string()));
            base.append_option(window.source.and_then(|i| base_ns[i]));
        }
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(dir.finish()),
            Arc::new(path.finish()),
            Arc::new(base.finish()),
        ];
        for (level, field) in self.schema.fields().iter().enumerate().skip(3) {
            columns.push(match self.windows.is_empty() {
                true => new_empty_array(field.data_type()),
                false => ScalarValue::iter_to_array(
                    self.windows
                        .iter()
                        .map(|w| w.partition_values[level - 3].clone()),
                )?,
            });
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

#[async_trait]
impl TableProvider for CpuTraceTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // Only `base_ns` needs the traces parsed.
        let needs_base = projection.is_none_or(|p| p.contains(&2));
        let batch = self.batch(needs_base)?;
        let table = MemTable::try_new(self.schema.clone(), vec![vec![batch]])?;
        table.scan(state, projection, filters, limit).await
    }
}
