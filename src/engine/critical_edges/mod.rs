//! `critical_edges(nodes)`: the edges of one step's critical-path graph, built in one pass
//! over the step's nodes: its CPU events, GPU ops and waits, as one list
//! (sql/scripts/critical_path_graph.sql gathers them per step and unnests the edges).
//!
//! In SQL the edges took two stages of windows, self-joins and unions over every thread's
//! call-stack markers, then a sort of all 3.27 M edges to number them: 2.4 s of the 5.9 s
//! that the path of every step of a 1 M-event window took. A step is a few hundred nodes,
//! so here each is a few small sorts.
//!
//! The rules (HTA's lightweight critical path; docs/reports.md has where they differ):
//!
//! ```text
//!  thread 1   A( ─── B( ══ )B ─── )A          ── call stack, in HTA's marker order
//!  lock       L1( ═══ )L1 ── L2( ═══ )L2      ── runtime lock: ends in order, every thread
//!  stream 7        [k1]─kk─[k2]               ── an op's time; the gap to the next op
//!                 ▲ launch   ▲ sync           ── launch delay (empty queue), waits
//! ```
//!
//! - a thread's call stack: its ops' start and end markers in order (at one time ends before
//!   starts, the longer of two starts first, the shorter of two ends first), each joined to
//!   the one before it; a top-level start follows the previous marker at no cost, and the
//!   end of a blocking call costs nothing (the GPU side carries its wait);
//! - the runtime lock (`is_lock` calls, over all threads in time order): each end takes the
//!   starts since the previous end, and follows that end;
//! - a GPU op: its own time; its launch delay when its stream's queue was empty (or it opens
//!   a graph replay on its lane) and nothing it waited for was still running, else the gap
//!   after the previous op of its stream (under 1.5 ms, and not bridged by a wait);
//! - a wait (`is_op`: an op waits for an event's op on another stream; else a synchronizing
//!   call's end waits for `source`).
//!
//! Nodes are numbered `idx * 2` (start) and `idx * 2 + 1` (end). `edge_id` numbers the edges
//! as HTA adds them (lock, call stacks thread by thread, GPU ops, waits), which decides
//! between paths of equal weight in `longest_path`. An edge keeps the row of the node it is
//! named after, and the names are taken once per batch (a hash join of the names back onto
//! the edges took 1.2 s at 1 M events).
//!
//! Modules, along the data flow: [`nodes`] reads a batch's lists of nodes, [`graph`] makes
//! each step's edges, and [`Out`] (here) gathers them into the function's Arrow result.

mod graph;
mod nodes;

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, Int64Array, ListArray, StringArray, StructArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use graph::Edge;
use nodes::{Nodes, FLAGS, INTS};

/// The SQL function `critical_edges(nodes)` -> the step's edges.
pub fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(CriticalEdges {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CriticalEdges {
    signature: Signature,
}

/// The edges' fields: BIGINT but `type` and `bound_by` (text) and `name` (as the nodes').
const OUT: [&str; 15] = [
    "pass",
    "seq",
    "pid",
    "tid",
    "src",
    "dst",
    "ts",
    "end_ts",
    "type",
    "weight",
    "name",
    "device_id",
    "stream_id",
    "edge_id",
    "bound_by",
];

fn out_fields(name_type: &DataType) -> Fields {
    OUT.iter()
        .map(|&field| {
            let kind = match field {
                "type" | "bound_by" => DataType::Utf8,
                "name" => name_type.clone(),
                _ => DataType::Int64,
            };
            Field::new(field, kind, true)
        })
        .collect()
}

/// The type of `nodes`' `name`, once its fields are checked.
fn name_type(nodes: &DataType) -> DfResult<DataType> {
    let fields = match nodes {
        DataType::List(item) => match item.data_type() {
            DataType::Struct(fields) => Some(fields),
            _ => None,
        },
        _ => None,
    };
    let all = INTS.iter().chain(&FLAGS).chain(&["name"]);
    if let Some(missing) = all
        .clone()
        .find(|f| fields.is_none_or(|s| s.find(f).is_none()))
    {
        return Err(DataFusionError::Plan(format!(
            "critical_edges takes a list of structs with the fields {:?}; {nodes} has no \
             `{missing}`",
            all.collect::<Vec<_>>()
        )));
    }
    let (_, name) = fields.and_then(|f| f.find("name")).expect("checked above");
    Ok(name.data_type().clone())
}

impl ScalarUDFImpl for CriticalEdges {
    fn name(&self) -> &str {
        "critical_edges"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        let name = name_type(&args[0])?;
        Ok(DataType::new_list(
            DataType::Struct(out_fields(&name)),
            true,
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let nodes = Nodes::new(&arrays[0])?;
        // about two edges a node
        let mut out = Out::with_capacity(nodes.names.len() * 2);
        let mut offsets = vec![0i32];
        for row in 0..args.number_rows {
            nodes.step(row)?.edges(&mut out);
            offsets.push(i32::try_from(out.len()).map_err(|_| {
                DataFusionError::Execution("critical_edges: more than 2^31 edges".into())
            })?);
        }
        let fields = out_fields(nodes.names.data_type());
        let field = Arc::new(Field::new_list_field(
            DataType::Struct(fields.clone()),
            true,
        ));
        let values = Arc::new(out.finish(fields, &nodes.names)?);
        let list = ListArray::try_new(field, OffsetBuffer::new(offsets.into()), values, None)?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

/// The edges of a batch of steps, column by column.
struct Out {
    /// pass, seq, src, dst, ts, end_ts, weight, edge_id
    values: [Vec<i64>; 8],
    /// pid, tid, device_id, stream_id
    nullable: [Vec<Option<i64>>; 4],
    kind: Vec<&'static str>,
    name: Vec<Option<u64>>,
    bound_by: Vec<Option<&'static str>>,
}

impl Out {
    fn with_capacity(edges: usize) -> Out {
        Out {
            values: std::array::from_fn(|_| Vec::with_capacity(edges)),
            nullable: std::array::from_fn(|_| Vec::with_capacity(edges)),
            kind: Vec::with_capacity(edges),
            name: Vec::with_capacity(edges),
            bound_by: Vec::with_capacity(edges),
        }
    }

    fn len(&self) -> usize {
        self.kind.len()
    }

    fn push(&mut self, e: &Edge, edge_id: i64) {
        let values = [
            e.pass, e.seq, e.src, e.dst, e.ts, e.end_ts, e.weight, edge_id,
        ];
        for (column, v) in self.values.iter_mut().zip(values) {
            column.push(v);
        }
        let nullable = [e.pid, e.tid, e.device_id, e.stream_id];
        for (column, v) in self.nullable.iter_mut().zip(nullable) {
            column.push(v);
        }
        self.kind.push(e.kind.text());
        self.name.push(e.name.map(|row| row as u64));
        self.bound_by.push(e.bound_by);
    }

    /// The edges as structs of `fields` (OUT's order), their names taken from `names`.
    fn finish(self, fields: Fields, names: &ArrayRef) -> DfResult<StructArray> {
        let [pass, seq, src, dst, ts, end_ts, weight, edge_id] = self
            .values
            .map(|v| Arc::new(Int64Array::from(v)) as ArrayRef);
        let [pid, tid, device_id, stream_id] = self
            .nullable
            .map(|v| Arc::new(Int64Array::from(v)) as ArrayRef);
        let kind = Arc::new(StringArray::from(self.kind));
        let name = take(names.as_ref(), &UInt64Array::from(self.name), None)?;
        let bound_by = Arc::new(StringArray::from(self.bound_by));
        let columns: Vec<ArrayRef> = vec![
            pass, seq, pid, tid, src, dst, ts, end_ts, kind, weight, name, device_id, stream_id,
            edge_id, bound_by,
        ];
        Ok(StructArray::try_new(fields, columns, None)?)
    }
}
