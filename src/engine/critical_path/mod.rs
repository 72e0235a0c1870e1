//! `critical_path(events, ops, syncs, speedup)`: the critical path of one step, made in one
//! pass over the step's nodes (a list each of its CPU events, GPU ops and syncs; SQL gathers
//! them, sql/scripts/critical_path_graph.sql): the step's graph, then its heaviest path under the
//! what-if's weights, returned as the path's segments in order.
//!
//! In SQL the edges took two stages of windows, self-joins and unions over every thread's
//! call-stack markers, then a sort of all 3.27 M edges to number them: 2.4 s of the 5.9 s
//! that the path of every step of a 1 M-event window took. A step is a few hundred nodes,
//! so here each is a few small sorts. The edges never leave the function: as a table they
//! were unnested, held, aggregated again for the path and joined back to it (the edges' and
//! the path's stages took 1.5-2.1 s at 1 M events; this one stage, 0.9-1.0 s).
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
//!   end of a blocking call costs nothing (the GPU side carries its wait); a step's backward
//!   thread (its one thread of `autograd` ops) is on its forward thread's stack, as in HTA;
//! - the runtime lock (`is_lock` calls, over all threads in time order): each end takes the
//!   starts since the previous end, and follows that end;
//! - a GPU op: its own time; its launch delay when its stream's queue was empty (or it opens
//!   a graph replay on its lane) and nothing it waited for was still running, else the gap
//!   after the previous op of its stream (under 1.5 ms, and not bridged by a wait);
//! - a wait (`is_op`: an op waits for an event's op on another stream; else a synchronizing
//!   call's end waits for `source`), found from the step's syncs among its ops ([`syncs`]).
//!
//! Nodes are numbered `idx * 2` (start) and `idx * 2 + 1` (end). `edge_id` numbers the edges
//! as HTA adds them (lock, call stacks thread by thread, GPU ops, waits), which decides
//! between paths of equal weight ([`path`]). An edge keeps the row of the node it is named
//! after, and the path's names are taken once per batch (a hash join of the names back onto
//! the edges took 1.2 s at 1 M events).
//!
//! Modules, along the data flow: [`nodes`] reads a batch's lists of nodes, [`syncs`] finds
//! what each sync waited for, [`graph`] makes each step's edges, [`speedup`] reweighs them
//! for a what-if, [`path`] finds the heaviest path, and [`Out`] (here) gathers its segments
//! into the function's Arrow result.

mod graph;
mod nodes;
mod path;
mod speedup;
mod syncs;

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
use nodes::{Nodes, KINDS};
use path::Graph;
use speedup::{Factors, Speedup};

/// The SQL function `critical_path(events, ops, syncs, speedup)` -> the step's path
/// segments.
pub fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(CriticalPath {
        signature: Signature::any(4, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CriticalPath {
    signature: Signature,
}

/// The segments' fields: BIGINT but `type` and `bound_by` (text) and `name` (as the
/// events' names). `dur_ns` is the weight under the what-if, `measured_dur_ns` as measured, and
/// `measured_ns` the length of the path as measured (a what-if only).
const OUT: [&str; 13] = [
    "position",
    "type",
    "bound_by",
    "name",
    "pid",
    "tid",
    "device_id",
    "stream_id",
    "ts",
    "end_ts",
    "dur_ns",
    "measured_dur_ns",
    "measured_ns",
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

/// The type of the path's `name` (the events' names), once every argument's fields are
/// checked.
fn name_type(args: &[DataType]) -> DfResult<DataType> {
    for (kind, arg) in KINDS.iter().zip(args) {
        kind.fields(arg)?;
    }
    let events = KINDS[0].fields(&args[0])?;
    let (_, name) = events.find("name").expect("checked above");
    Ok(name.data_type().clone())
}

impl ScalarUDFImpl for CriticalPath {
    fn name(&self) -> &str {
        "critical_path"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        let name = name_type(args)?;
        Ok(DataType::new_list(
            DataType::Struct(out_fields(&name)),
            true,
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let speedup = match &args.args[3] {
            ColumnarValue::Scalar(text) => text.try_as_str().map(|t| t.unwrap_or("")),
            ColumnarValue::Array(_) => None,
        };
        let speedup = Speedup::parse(speedup.ok_or_else(|| {
            DataFusionError::Plan("critical_path: the speedup is one constant text".into())
        })?)?;
        let [events, ops, syncs] = [0, 1, 2].map(|i| args.args[i].to_array(args.number_rows));
        let nodes = Nodes::new([&events?, &ops?, &syncs?])?;
        let factors = speedup.factors(&nodes.names)?;
        let mut out = Out::default();
        let mut offsets = vec![0i32];
        for row in 0..args.number_rows {
            out.push_path(&nodes.step(row)?.edges(), &factors, speedup.asked)?;
            offsets.push(i32::try_from(out.len()).map_err(|_| {
                DataFusionError::Execution("critical_path: more than 2^31 segments".into())
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

/// An edge's weight on the way to the path: -1 µs or less counts 0, as in HTA.
fn path_weight(weight: i64) -> i64 {
    if weight <= -1000 {
        0
    } else {
        weight
    }
}

/// The path segments of a batch of steps, column by column.
#[derive(Default)]
struct Out {
    /// position, ts, end_ts, dur_ns, measured_dur_ns
    values: [Vec<i64>; 5],
    /// pid, tid, device_id, stream_id, measured_ns
    nullable: [Vec<Option<i64>>; 5],
    kind: Vec<&'static str>,
    name: Vec<Option<u64>>,
    bound_by: Vec<Option<&'static str>>,
}

impl Out {
    fn len(&self) -> usize {
        self.kind.len()
    }

    /// The heaviest path through a step's `edges` (in edge_id order), under the what-if's
    /// weights; with a what-if asked for, the path as measured gives `measured_ns`.
    fn push_path(&mut self, edges: &[Edge], factors: &Factors, asked: bool) -> DfResult<()> {
        let graph = Graph::new(edges.iter().map(|e| (e.src, e.dst)));
        let weights: Vec<i64> = edges.iter().map(|e| factors.weight(e)).collect();
        let path = graph.longest(&weights.iter().map(|&w| path_weight(w)).collect::<Vec<_>>())?;
        let measured_ns = if !asked {
            None
        } else {
            let unchanged = edges.iter().zip(&weights).all(|(e, &w)| e.weight == w);
            let measured = if unchanged {
                path.clone()
            } else {
                let measured: Vec<i64> = edges.iter().map(|e| path_weight(e.weight)).collect();
                graph.longest(&measured)?
            };
            // the causes' time, as SQL summed it (NULL if the path has none)
            (measured.iter().map(|&i| &edges[i]))
                .filter(|e| e.bound_by.is_some())
                .map(|e| e.weight)
                .reduce(|a, b| a + b)
        };
        for (position, &i) in path.iter().enumerate() {
            let e = &edges[i];
            let values = [position as i64, e.ts, e.end_ts, weights[i], e.weight];
            for (column, v) in self.values.iter_mut().zip(values) {
                column.push(v);
            }
            let nullable = [e.pid, e.tid, e.device_id, e.stream_id, measured_ns];
            for (column, v) in self.nullable.iter_mut().zip(nullable) {
                column.push(v);
            }
            self.kind.push(e.kind.text());
            self.name.push(e.name.map(|row| row as u64));
            self.bound_by.push(e.bound_by);
        }
        Ok(())
    }

    /// The segments as structs of `fields` (OUT's order), their names taken from `names`.
    fn finish(self, fields: Fields, names: &ArrayRef) -> DfResult<StructArray> {
        let [position, ts, end_ts, dur_ns, measured_dur_ns] = self
            .values
            .map(|v| Arc::new(Int64Array::from(v)) as ArrayRef);
        let [pid, tid, device_id, stream_id, measured_ns] = self
            .nullable
            .map(|v| Arc::new(Int64Array::from(v)) as ArrayRef);
        let kind = Arc::new(StringArray::from(self.kind));
        let name = take(names.as_ref(), &UInt64Array::from(self.name), None)?;
        let bound_by = Arc::new(StringArray::from(self.bound_by));
        let columns: Vec<ArrayRef> = vec![
            position,
            kind,
            bound_by,
            name,
            pid,
            tid,
            device_id,
            stream_id,
            ts,
            end_ts,
            dur_ns,
            measured_dur_ns,
            measured_ns,
        ];
        Ok(StructArray::try_new(fields, columns, None)?)
    }
}
