//! The logical extension codec a tracesql cluster speaks: Ballista's own (its cache node,
//! the file formats, DataFusion's defaults), plus the table providers of a catalog that are
//! not listing tables: `cpu_event` and `cpu_trace` (by their recipe, see [`super::tables`])
//! and in-memory tables such as `cbid` (their batches, as Arrow IPC).
//!
//! The physical codec adds two operators to Ballista's: [`ConvertExec`], the conversion of
//! an archive's windows (`convert --cluster`), and [`CpuEventExec`], `cpu_event` read on the
//! executors (each over a scan of item numbers that Ballista can split among tasks). The text-group aggregate has none: the scheduler
//! plans without its rule (see [`super::session_state`]).

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use super::convert::{self, ConvertExec, ConvertTable};
use super::tables::{self, CpuEventExec, Shipped};

/// The first byte of an encoded provider of ours.
const CPU_TABLE: u8 = b'c';
const MEM_TABLE: u8 = b'm';
const CONVERT: u8 = b'v';
/// Ballista's own physical nodes are protobuf messages; ours start with this marker, which
/// no message of theirs starts with (it would be field 0, which protobuf forbids).
const OURS: [u8; 2] = [0, b't'];

#[derive(Debug, Default)]
pub struct TraceLogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for TraceLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match buf.split_first() {
            Some((&CPU_TABLE, rest)) => Ok(tables::decode(rest)?),
            Some((&CONVERT, rest)) => Ok(Arc::new(ConvertTable {
                job: convert::decode(rest)?,
            })),
            Some((&MEM_TABLE, rest)) => {
                let reader = StreamReader::try_new(rest, None)?;
                let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
                Ok(Arc::new(MemTable::try_new(schema, vec![batches])?))
            }
            _ => self
                .ballista
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if let Some(shipped) = node.downcast_ref::<Shipped>() {
            buf.push(CPU_TABLE);
            buf.extend(tables::encode(shipped.table, &shipped.recipe)?);
            return Ok(());
        }
        if let Some(table) = node.downcast_ref::<ConvertTable>() {
            buf.push(CONVERT);
            buf.extend(convert::encode(&table.job)?);
            return Ok(());
        }
        if let Some(mem) = node.downcast_ref::<MemTable>() {
            buf.push(MEM_TABLE);
            let mut writer = StreamWriter::try_new(&mut *buf, &mem.schema())?;
            for partition in &mem.batches {
                let batches = partition
                    .try_read()
                    .map_err(|_| DataFusionError::Internal("memory table is locked".into()))?;
                for batch in batches.iter() {
                    writer.write(batch)?;
                }
            }
            writer.finish()?;
            return Ok(());
        }
        self.ballista
            .try_encode_table_provider(table_ref, node, buf)
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }
}

/// Ballista's physical codec (shuffles, its operators), plus [`ConvertExec`].
#[derive(Debug, Default)]
pub struct TracePhysicalCodec {
    ballista: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for TracePhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let Some(ours) = buf.strip_prefix(&OURS) else {
            return self.ballista.try_decode(buf, inputs, ctx, proto_converter);
        };
        let input = match inputs {
            [input] => input.clone(),
            _ => {
                return Err(DataFusionError::Internal(format!(
                    "an operator of tracesql's has one input, this one {}",
                    inputs.len()
                )))
            }
        };
        match ours.split_first() {
            Some((&CONVERT, job)) => Ok(Arc::new(ConvertExec::new(convert::decode(job)?, input))),
            Some((&CPU_TABLE, recipe)) => Ok(Arc::new(tables::decode_exec(recipe, input)?)),
            _ => Err(DataFusionError::Internal(
                "an unknown operator of tracesql's (a newer tracesql sent it?)".into(),
            )),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(exec) = node.downcast_ref::<ConvertExec>() {
            buf.extend(OURS);
            buf.push(CONVERT);
            buf.extend(convert::encode(&exec.job)?);
            return Ok(());
        }
        if let Some(exec) = node.downcast_ref::<CpuEventExec>() {
            buf.extend(OURS);
            buf.push(CPU_TABLE);
            buf.extend(tables::encode_exec(exec)?);
            return Ok(());
        }
        self.ballista.try_encode(node, buf, proto_converter)
    }
}
