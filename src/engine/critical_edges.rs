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

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray, StringArray, StructArray,
    UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

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

/// The nodes' fields: numbers (read as BIGINT; NULL where a kind has no such field) and
/// flags (BOOLEAN, NULL read as false, as SQL's WHERE and CASE take it), then `name`.
/// `kind` says which of the three a node is.
const INTS: [&str; 17] = [
    "kind",
    "idx",
    "pid",
    "tid",
    "ts",
    "end_ts",
    "device_id",
    "stream_id",
    "api_ts",
    "call",
    "queue_at_call",
    "queue_at_start",
    "prev_idx",
    "prev_end",
    "source",
    "source_end",
    "target",
];
const FLAGS: [&str; 5] = ["is_lock", "is_blocking", "replay_start", "is_comm", "is_op"];
/// Each field's place in INTS (`int::`) or FLAGS (`flag::`).
mod int {
    pub const KIND: usize = 0;
    pub const IDX: usize = 1;
    pub const PID: usize = 2;
    pub const TID: usize = 3;
    pub const TS: usize = 4;
    pub const END_TS: usize = 5;
    pub const DEVICE_ID: usize = 6;
    pub const STREAM_ID: usize = 7;
    pub const API_TS: usize = 8;
    pub const CALL: usize = 9;
    pub const QUEUE_AT_CALL: usize = 10;
    pub const QUEUE_AT_START: usize = 11;
    pub const PREV_IDX: usize = 12;
    pub const PREV_END: usize = 13;
    pub const SOURCE: usize = 14;
    pub const SOURCE_END: usize = 15;
    pub const TARGET: usize = 16;
}
mod flag {
    pub const IS_LOCK: usize = 0;
    pub const IS_BLOCKING: usize = 1;
    pub const REPLAY_START: usize = 2;
    pub const IS_COMM: usize = 3;
    pub const IS_OP: usize = 4;
}
/// `kind`: a CPU op or runtime call (an [`Event`]), a GPU op ([`Op`]), a [`Wait`].
const CPU: i64 = 0;
const GPU: i64 = 1;
const WAIT: i64 = 2;

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

/// The argument: one list of nodes per step, its struct fields cast once per batch.
struct Nodes {
    lists: ListArray,
    ints: Vec<Int64Array>,
    flags: Vec<BooleanArray>,
    names: ArrayRef,
}

impl Nodes {
    fn new(arg: &ArrayRef) -> DfResult<Nodes> {
        let lists = arg.as_list_opt::<i32>().ok_or_else(|| {
            DataFusionError::Execution(format!("critical_edges: not a list: {}", arg.data_type()))
        })?;
        let items = lists.values().as_struct();
        let column = |name: &str, to: &DataType| -> DfResult<ArrayRef> {
            let column = items.column_by_name(name).ok_or_else(|| {
                DataFusionError::Execution(format!("critical_edges: no field `{name}`"))
            })?;
            Ok(cast(column, to)?)
        };
        Ok(Nodes {
            lists: lists.clone(),
            ints: (INTS.iter())
                .map(|n| {
                    Ok(column(n, &DataType::Int64)?
                        .as_primitive::<Int64Type>()
                        .clone())
                })
                .collect::<DfResult<_>>()?,
            flags: (FLAGS.iter())
                .map(|n| Ok(column(n, &DataType::Boolean)?.as_boolean().clone()))
                .collect::<DfResult<_>>()?,
            names: items
                .column_by_name("name")
                .expect("checked by return_type")
                .clone(),
        })
    }

    /// Row `row`'s step: its nodes, by kind (none for a NULL list).
    fn step(&self, row: usize) -> DfResult<Step> {
        let mut step = Step::default();
        if self.lists.is_null(row) {
            return Ok(step);
        }
        let offsets = self.lists.value_offsets();
        for i in offsets[row] as usize..offsets[row + 1] as usize {
            match self.req(int::KIND, i)? {
                CPU => step.events.push(Event::read(self, i)?),
                GPU => step.ops.push(Op::read(self, i)?),
                WAIT => step.waits.push(Wait::read(self, i)?),
                other => {
                    return Err(DataFusionError::Execution(format!(
                        "critical_edges: no node kind {other}"
                    )))
                }
            }
        }
        // the ops' edges are numbered in idx order
        step.ops.sort_unstable_by_key(|g| g.idx);
        Ok(step)
    }

    fn int(&self, field: usize, i: usize) -> Option<i64> {
        let column = &self.ints[field];
        column.is_valid(i).then(|| column.value(i))
    }

    /// A number that the graph's rules need: NULL is an error that names it.
    fn req(&self, field: usize, i: usize) -> DfResult<i64> {
        self.int(field, i).ok_or_else(|| {
            DataFusionError::Execution(format!(
                "critical_edges: a node without its `{}`",
                INTS[field]
            ))
        })
    }

    fn flag(&self, field: usize, i: usize) -> bool {
        let column = &self.flags[field];
        column.is_valid(i) && column.value(i)
    }
}

/// A CPU op or runtime call; `row`, its place in the batch's nodes (for its name).
struct Event {
    row: usize,
    idx: i64,
    pid: Option<i64>,
    tid: Option<i64>,
    ts: i64,
    end_ts: i64,
    is_lock: bool,
    is_blocking: bool,
}

impl Event {
    fn read(n: &Nodes, i: usize) -> DfResult<Event> {
        Ok(Event {
            row: i,
            idx: n.req(int::IDX, i)?,
            pid: n.int(int::PID, i),
            tid: n.int(int::TID, i),
            ts: n.req(int::TS, i)?,
            end_ts: n.req(int::END_TS, i)?,
            is_lock: n.flag(flag::IS_LOCK, i),
            is_blocking: n.flag(flag::IS_BLOCKING, i),
        })
    }
}

/// A GPU op, with its launch call (`call`, a CPU event's idx) and the op before it on its
/// stream.
struct Op {
    row: usize,
    idx: i64,
    pid: Option<i64>,
    tid: Option<i64>,
    ts: i64,
    end_ts: i64,
    device_id: Option<i64>,
    stream_id: Option<i64>,
    api_ts: i64,
    call: i64,
    queue_at_call: Option<i64>,
    queue_at_start: Option<i64>,
    prev_idx: Option<i64>,
    prev_end: Option<i64>,
    replay_start: bool,
    is_comm: bool,
}

impl Op {
    fn read(n: &Nodes, i: usize) -> DfResult<Op> {
        Ok(Op {
            row: i,
            idx: n.req(int::IDX, i)?,
            pid: n.int(int::PID, i),
            tid: n.int(int::TID, i),
            ts: n.req(int::TS, i)?,
            end_ts: n.req(int::END_TS, i)?,
            device_id: n.int(int::DEVICE_ID, i),
            stream_id: n.int(int::STREAM_ID, i),
            api_ts: n.req(int::API_TS, i)?,
            call: n.req(int::CALL, i)?,
            queue_at_call: n.int(int::QUEUE_AT_CALL, i),
            queue_at_start: n.int(int::QUEUE_AT_START, i),
            prev_idx: n.int(int::PREV_IDX, i),
            prev_end: n.int(int::PREV_END, i),
            replay_start: n.flag(flag::REPLAY_START, i),
            is_comm: n.flag(flag::IS_COMM, i),
        })
    }
}

/// What a wait waited for (`source`, a GPU op, and its end) and what waited (`target`: a GPU
/// op's idx if `is_op`, else a synchronizing call's).
struct Wait {
    is_op: bool,
    source: i64,
    source_end: i64,
    target: i64,
}

impl Wait {
    fn read(n: &Nodes, i: usize) -> DfResult<Wait> {
        Ok(Wait {
            source: n.req(int::SOURCE, i)?,
            source_end: n.req(int::SOURCE_END, i)?,
            target: n.req(int::TARGET, i)?,
            is_op: n.flag(flag::IS_OP, i),
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Operator,
    Dependency,
    Launch,
    KernelKernel,
    Sync,
}

impl Type {
    fn text(self) -> &'static str {
        match self {
            Type::Operator => "operator",
            Type::Dependency => "dependency",
            Type::Launch => "launch",
            Type::KernelKernel => "kernel_kernel",
            Type::Sync => "sync",
        }
    }
}

/// What an edge's time was spent on (HTA's bound_by; its communication kernels matched by
/// name in SQL, `is_comm`).
fn bound_by(kind: Type, device_id: Option<i64>, is_comm: bool) -> Option<&'static str> {
    match kind {
        Type::Launch => Some("launch_overhead"),
        Type::KernelKernel => Some("kernel_kernel_overhead"),
        Type::Operator if device_id.is_none() => Some("cpu"),
        Type::Operator if is_comm => Some("gpu_communication"),
        Type::Operator => Some("gpu_compute"),
        Type::Dependency | Type::Sync => None,
    }
}

struct Edge {
    pass: i64,
    seq: i64,
    pid: Option<i64>,
    tid: Option<i64>,
    src: i64,
    dst: i64,
    ts: i64,
    end_ts: i64,
    kind: Type,
    weight: i64,
    /// the node whose name the edge carries, as its row in the batch's nodes
    name: Option<usize>,
    device_id: Option<i64>,
    stream_id: Option<i64>,
    bound_by: Option<&'static str>,
}

impl Edge {
    /// The order of `edge_id`: pass, the thread (call-stack edges only, NULLs last), seq,
    /// then the end node.
    fn order(&self) -> (i64, (bool, i64), (bool, i64), i64, i64) {
        let thread = |v: Option<i64>| match (self.pass, v) {
            (2, Some(v)) => (false, v),
            _ => (true, 0),
        };
        (
            self.pass,
            thread(self.pid),
            thread(self.tid),
            self.seq,
            self.dst,
        )
    }
}

/// A start or end marker of a CPU event on its thread's call stack.
struct Marker {
    event: usize,
    is_start: bool,
    t: i64,
}

/// A map keyed by node idx, through a fast hash.
type FastMap<V> = HashMap<i64, V, foldhash::fast::FixedState>;

/// SQL's `ORDER BY x NULLS LAST` for a nullable number.
fn nulls_last(v: Option<i64>) -> (bool, i64) {
    (v.is_none(), v.unwrap_or(0))
}

/// A node number: `idx * 2` for a start, `idx * 2 + 1` for an end.
fn node(idx: i64, is_start: bool) -> i64 {
    idx * 2 + i64::from(!is_start)
}

#[derive(Default)]
struct Step {
    events: Vec<Event>,
    ops: Vec<Op>,
    waits: Vec<Wait>,
}

impl Step {
    /// Every edge of the step's graph, appended to `out` in `edge_id` order.
    fn edges(&self, out: &mut Out) {
        let mut edges = Vec::with_capacity(self.events.len() * 2 + self.ops.len() * 2);
        let markers = self.markers();
        self.lock_edges(&markers, &mut edges);
        self.stack_edges(&markers, &mut edges);
        self.gpu_edges(&mut edges);
        self.call_waits(&mut edges);
        // made nearly in order (ops by idx): a stable sort takes them in a few runs, and keeps
        // ties (the waits of one op) as made
        // made in order but for a step's waits of several ops (a sort moves ~200 bytes an edge)
        if !edges.is_sorted_by_key(Edge::order) {
            edges.sort_by_key(Edge::order);
        }
        for (id, edge) in edges.iter().enumerate() {
            out.push(edge, id as i64 + 1);
        }
    }

    /// Each GPU op's row in the batch's nodes, by idx.
    fn op_rows(&self) -> FastMap<usize> {
        self.ops.iter().map(|g| (g.idx, g.row)).collect()
    }

    /// Every event's start and end, in call-stack order thread by thread: at one time ends
    /// before starts, the longer of two starts first, the shorter of two ends first, then by
    /// idx (a start) or -idx (an end).
    fn markers(&self) -> Vec<Marker> {
        let mut markers: Vec<Marker> = (self.events.iter().enumerate())
            .flat_map(|(event, e)| {
                [
                    Marker {
                        event,
                        is_start: true,
                        t: e.ts,
                    },
                    Marker {
                        event,
                        is_start: false,
                        t: e.end_ts,
                    },
                ]
            })
            .collect();
        markers.sort_unstable_by_key(|m| {
            let e = &self.events[m.event];
            let (o2, o3) = if m.is_start {
                (e.ts - e.end_ts, e.idx)
            } else {
                (e.end_ts - e.ts, -e.idx)
            };
            (
                nulls_last(e.pid),
                nulls_last(e.tid),
                m.t,
                m.is_start,
                o2,
                o3,
            )
        });
        markers
    }

    /// Consecutive markers of a thread's call stack. Two runtime-lock calls meet only end to
    /// start (the lock edges join the rest).
    fn stack_edges(&self, markers: &[Marker], edges: &mut Vec<Edge>) {
        let mut pos = 0;
        let mut depth = 0i64;
        // per depth, the event last opened there (for the op a start opens inside)
        let mut opened: Vec<Option<usize>> = Vec::new();
        let mut prev: Option<&Marker> = None;
        for m in markers {
            let e = &self.events[m.event];
            let same_thread = prev.is_some_and(|p| {
                let pe = &self.events[p.event];
                (pe.pid, pe.tid) == (e.pid, e.tid)
            });
            if !same_thread {
                (pos, depth, prev) = (0, 0, None);
                opened.clear();
            }
            pos += 1;
            let mut parent = None;
            if m.is_start {
                depth += 1;
                let level = usize::try_from(depth).unwrap_or(0);
                parent = opened.get(level.wrapping_sub(1)).copied().flatten();
                if opened.len() <= level {
                    opened.resize(level + 1, None);
                }
                opened[level] = Some(m.event);
            } else {
                depth -= 1;
            }
            if let Some(p) = prev {
                let pe = &self.events[p.event];
                let lock_pair = e.is_lock && pe.is_lock && (p.is_start || !m.is_start);
                if !lock_pair {
                    let top = m.is_start && depth == 1;
                    let kind = if top {
                        Type::Dependency
                    } else {
                        Type::Operator
                    };
                    let weight = if top || (!m.is_start && e.is_blocking) {
                        0
                    } else {
                        m.t - p.t
                    };
                    // the op the time belongs to: the earlier op from its start, the later one
                    // up to its end, their parent in between
                    let name = if top {
                        None
                    } else if p.is_start {
                        Some(pe.row)
                    } else if !m.is_start {
                        Some(e.row)
                    } else {
                        parent.map(|event| self.events[event].row)
                    };
                    edges.push(Edge {
                        pass: 2,
                        seq: pos,
                        pid: e.pid,
                        tid: e.tid,
                        src: node(pe.idx, p.is_start),
                        dst: node(e.idx, m.is_start),
                        ts: p.t,
                        end_ts: m.t,
                        kind,
                        weight,
                        name,
                        device_id: None,
                        stream_id: None,
                        bound_by: bound_by(kind, None, false),
                    });
                }
            }
            prev = Some(m);
        }
    }

    /// The runtime lock, over every thread in time order: an end takes every lock call
    /// started since the previous end (its own start: the call's time), and follows that end
    /// directly.
    fn lock_edges(&self, markers: &[Marker], edges: &mut Vec<Edge>) {
        let mut lock: Vec<&Marker> = (markers.iter())
            .filter(|m| self.events[m.event].is_lock)
            .collect();
        lock.sort_unstable_by_key(|m| (m.t, self.events[m.event].idx, Reverse(m.is_start)));
        let mut started: Vec<(i64, &Marker)> = Vec::new();
        for (at, m) in lock.iter().enumerate() {
            let seq = at as i64 + 1;
            if m.is_start {
                started.push((seq, m));
                continue;
            }
            let e = &self.events[m.event];
            for (start_seq, s) in started.drain(..) {
                let se = &self.events[s.event];
                let own = se.idx == e.idx;
                let kind = if own {
                    Type::Operator
                } else {
                    Type::Dependency
                };
                edges.push(Edge {
                    pass: 1,
                    seq: seq * 1_000_000 + start_seq,
                    pid: e.pid,
                    tid: e.tid,
                    src: node(se.idx, true),
                    dst: node(e.idx, false),
                    ts: s.t,
                    end_ts: m.t,
                    kind,
                    weight: if own { m.t - s.t } else { 0 },
                    name: own.then_some(e.row),
                    device_id: None,
                    stream_id: None,
                    bound_by: bound_by(kind, None, false),
                });
            }
            if let Some(p) = at.checked_sub(1).map(|a| lock[a]).filter(|p| !p.is_start) {
                edges.push(Edge {
                    pass: 1,
                    seq: seq * 1_000_000,
                    pid: e.pid,
                    tid: e.tid,
                    src: node(self.events[p.event].idx, false),
                    dst: node(e.idx, false),
                    ts: p.t,
                    end_ts: m.t,
                    kind: Type::Dependency,
                    weight: 0,
                    name: None,
                    device_id: None,
                    stream_id: None,
                    bound_by: None,
                });
            }
        }
    }

    /// Each GPU op's own time, what its start waited for, and the launch delay or the gap
    /// after the previous op of its stream.
    fn gpu_edges(&self, edges: &mut Vec<Edge>) {
        let mut waits_of: FastMap<Vec<&Wait>> = Default::default();
        for w in self.waits.iter().filter(|w| w.is_op) {
            waits_of.entry(w.target).or_default().push(w);
        }
        let row_of = self.op_rows();
        for g in &self.ops {
            let edge = |seq: i64, src: i64, ts: i64, kind: Type, weight: i64, name_of: i64| Edge {
                pass: 3,
                seq: g.idx * 4 + seq,
                pid: g.pid,
                tid: g.tid,
                src,
                dst: node(g.idx, true),
                ts,
                end_ts: g.ts,
                kind,
                weight,
                name: row_of.get(&name_of).copied(),
                device_id: g.device_id,
                stream_id: g.stream_id,
                bound_by: bound_by(kind, g.device_id, g.is_comm),
            };
            edges.push(Edge {
                dst: node(g.idx, false),
                end_ts: g.end_ts,
                ..edge(
                    0,
                    node(g.idx, true),
                    g.ts,
                    Type::Operator,
                    g.end_ts - g.ts,
                    g.idx,
                )
            });
            let waits = waits_of.get(&g.idx);
            let waits: Vec<Option<&Wait>> = match waits {
                Some(list) => list.iter().map(|w| Some(*w)).collect(),
                None => vec![None],
            };
            for w in waits.iter().flatten() {
                let src = node(w.source, false);
                edges.push(edge(1, src, w.source_end, Type::Sync, 0, w.source));
            }
            for w in waits {
                let empty_queue = g.queue_at_call == Some(1) && g.queue_at_start == Some(0);
                let launch = (empty_queue || g.replay_start)
                    && g.prev_end.is_none_or(|p| p < g.api_ts)
                    && w.is_none_or(|w| w.source_end < g.api_ts);
                let unsynced = match w {
                    None => true,
                    Some(w) => g.prev_end.is_some_and(|p| w.source_end < p),
                };
                if launch {
                    let weight = g.ts - g.api_ts;
                    let src = node(g.call, true);
                    edges.push(edge(2, src, g.api_ts, Type::Launch, weight, g.idx));
                } else if let (Some(prev), Some(prev_end)) = (g.prev_idx, g.prev_end) {
                    if g.ts - prev_end < 1_500_000 && unsynced {
                        let (src, weight) = (node(prev, false), g.ts - prev_end);
                        edges.push(edge(2, src, prev_end, Type::KernelKernel, weight, prev));
                    }
                }
            }
        }
    }

    /// A synchronizing call ends after what it waited for.
    fn call_waits(&self, edges: &mut Vec<Edge>) {
        let by_idx: FastMap<&Event> = self.events.iter().map(|e| (e.idx, e)).collect();
        let row_of = self.op_rows();
        let mut calls: Vec<&Wait> = self.waits.iter().filter(|w| !w.is_op).collect();
        calls.sort_unstable_by_key(|w| (w.source, w.target));
        for w in calls {
            let Some(c) = by_idx.get(&w.target) else {
                continue;
            };
            edges.push(Edge {
                pass: 4,
                seq: w.source * 4 + 3,
                pid: c.pid,
                tid: c.tid,
                src: node(w.source, false),
                dst: node(c.idx, false),
                ts: w.source_end,
                end_ts: c.end_ts,
                kind: Type::Sync,
                weight: 0,
                name: row_of.get(&w.source).copied(),
                device_id: None,
                stream_id: None,
                bound_by: None,
            });
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(row: usize, idx: i64, tid: i64, (ts, end_ts): (i64, i64), is_lock: bool) -> Event {
        Event {
            row,
            idx,
            pid: Some(1),
            tid: Some(tid),
            ts,
            end_ts,
            is_lock,
            is_blocking: false,
        }
    }

    /// The step's edges as (type, src, dst, weight, name row), in edge_id order.
    fn edges(step: &Step) -> Vec<(&'static str, i64, i64, i64, Option<u64>)> {
        let mut out = Out::with_capacity(0);
        step.edges(&mut out);
        let ids: Vec<i64> = out.values[7].clone();
        assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
        (0..out.len())
            .map(|i| {
                let v = |c: usize| out.values[c][i];
                (out.kind[i], v(2), v(3), v(6), out.name[i])
            })
            .collect()
    }

    #[test]
    fn each_field_position_names_its_field() {
        let ints = [
            (int::KIND, "kind"),
            (int::IDX, "idx"),
            (int::PID, "pid"),
            (int::TID, "tid"),
            (int::TS, "ts"),
            (int::END_TS, "end_ts"),
            (int::DEVICE_ID, "device_id"),
            (int::STREAM_ID, "stream_id"),
            (int::API_TS, "api_ts"),
            (int::CALL, "call"),
            (int::QUEUE_AT_CALL, "queue_at_call"),
            (int::QUEUE_AT_START, "queue_at_start"),
            (int::PREV_IDX, "prev_idx"),
            (int::PREV_END, "prev_end"),
            (int::SOURCE, "source"),
            (int::SOURCE_END, "source_end"),
            (int::TARGET, "target"),
        ];
        for (at, name) in ints {
            assert_eq!(INTS[at], name);
        }
        let flags = [
            (flag::IS_LOCK, "is_lock"),
            (flag::IS_BLOCKING, "is_blocking"),
            (flag::REPLAY_START, "replay_start"),
            (flag::IS_COMM, "is_comm"),
            (flag::IS_OP, "is_op"),
        ];
        for (at, name) in flags {
            assert_eq!(FLAGS[at], name);
        }
    }

    #[test]
    fn a_call_stack_joins_each_marker_to_the_one_before_it() {
        // thread 1: A [0, 10) opens B [2, 5); then C [12, 15) at the top level
        let step = Step {
            events: vec![
                event(0, 10, 1, (0, 10), false),
                event(1, 11, 1, (2, 5), false),
                event(2, 12, 1, (12, 15), false),
            ],
            ..Step::default()
        };
        let (a, b, c) = (20, 22, 24); // start nodes; ends are +1
        assert_eq!(
            edges(&step),
            vec![
                ("operator", a, b, 2, Some(0)),         // A's time before B
                ("operator", b, b + 1, 3, Some(1)),     // B
                ("operator", b + 1, a + 1, 5, Some(0)), // A's time after B
                ("dependency", a + 1, c, 0, None),      // to the next top-level op
                ("operator", c, c + 1, 3, Some(2)),     // C
            ]
        );
    }

    #[test]
    fn overlapping_lock_calls_end_in_order_across_threads() {
        // two launch calls on two threads: L1 [0, 4) and L2 [1, 6)
        let step = Step {
            events: vec![event(0, 1, 1, (0, 4), true), event(1, 2, 2, (1, 6), true)],
            ..Step::default()
        };
        let (l1, l2) = (2, 4);
        assert_eq!(
            edges(&step)[..3],
            [
                ("operator", l1, l1 + 1, 4, Some(0)),    // L1's own time
                ("dependency", l2, l1 + 1, 0, None),     // L2 started before L1 ended
                ("dependency", l1 + 1, l2 + 1, 0, None), // L2 ends after L1
            ]
        );
    }

    fn op(row: usize, idx: i64, (ts, end_ts): (i64, i64), prev: Option<(i64, i64)>) -> Op {
        Op {
            row,
            idx,
            pid: Some(1),
            tid: Some(1),
            ts,
            end_ts,
            device_id: Some(0),
            stream_id: Some(7),
            api_ts: 0,
            call: 1,
            queue_at_call: Some(1),
            queue_at_start: Some(0),
            prev_idx: prev.map(|p| p.0),
            prev_end: prev.map(|p| p.1),
            replay_start: false,
            is_comm: false,
        }
    }

    #[test]
    fn an_op_waits_for_its_launch_its_stream_or_an_event() {
        // on stream 7, k1 launched at 0 onto an idle stream starts at 3; k2 queued behind it
        // starts 2 after it; k3 waits for kx (stream 8) through an event that ends after k2,
        // so no gap edge from k2 (listed out of idx order: numbered in it all the same)
        let mut k2 = op(2, 101, (12, 20), Some((100, 10)));
        k2.queue_at_call = Some(2);
        let mut k3 = op(3, 102, (30, 40), Some((101, 20)));
        k3.queue_at_call = Some(2);
        let mut kx = op(4, 103, (5, 25), None);
        kx.stream_id = Some(8);
        let step = Step {
            events: vec![event(0, 1, 1, (0, 2), true)],
            ops: vec![kx, k3, op(1, 100, (3, 10), None), k2],
            waits: vec![Wait {
                is_op: true,
                source: 103,
                source_end: 25,
                target: 102,
            }],
        };
        let (call, k1, k2, k3, kx) = (2, 200, 202, 204, 206);
        assert_eq!(
            edges(&step)[1..],
            [
                ("operator", k1, k1 + 1, 7, Some(1)),
                ("launch", call, k1, 3, Some(1)),
                ("operator", k2, k2 + 1, 8, Some(2)),
                ("kernel_kernel", k1 + 1, k2, 2, Some(1)), // named after the op before
                ("operator", k3, k3 + 1, 10, Some(3)),
                ("sync", kx + 1, k3, 0, Some(4)), // named after the awaited op
                ("operator", kx, kx + 1, 20, Some(4)),
                ("launch", call, kx, 5, Some(4)),
            ]
        );
    }
}
