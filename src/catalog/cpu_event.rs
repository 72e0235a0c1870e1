//! The `cpu_event` table provider: parses the windows' Kineto CPU traces when a query first
//! scans the table, so queries that never touch CPU events never pay for the JSON.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use super::cpu_trace::{cpu_event_schema, parse_cpu_trace};

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
    loaded: Mutex<Option<Arc<MemTable>>>,
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
        let mut guard = self
            .loaded
            .lock()
            .expect("cpu_event cache lock is never poisoned");
        if let Some(table) = guard.as_ref() {
            return Ok(table.clone());
        }
        let mut batches = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            let events =
                parse_cpu_trace(&source.path).map_err(|e| DataFusionError::External(e.into()))?;
            let mut columns: Vec<ArrayRef> = events.columns().to_vec();
            for value in &source.partition_values {
                columns.push(value.to_array_of_size(events.num_rows())?);
            }
            batches.push(RecordBatch::try_new(self.schema.clone(), columns)?);
        }
        let table = Arc::new(MemTable::try_new(self.schema.clone(), vec![batches])?);
        *guard = Some(table.clone());
        Ok(table)
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
