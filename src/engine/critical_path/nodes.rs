//! The nodes of a batch of steps, as `critical_path` gets them: per step, a list of its CPU
//! events, a list of its GPU ops and a list of its syncs (structs), read into [`Step`]s.
//! Three narrow lists, not one of every field: each list is copied twice by the
//! `array_agg` that makes it, and a node of one list of all three kinds carried 23 fields.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray};
use datafusion::arrow::compute::{cast, concat};
use datafusion::arrow::datatypes::{DataType, Fields, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};

use std::collections::HashMap;

use super::graph::Step;
use super::syncs::{waits, Sync};

/// The fields of each list: numbers (read as BIGINT), flags (BOOLEAN, NULL read as false,
/// as SQL's WHERE and CASE take it), and for events and ops `name`.
pub(super) struct Kind {
    pub(super) list: &'static str,
    pub(super) ints: &'static [&'static str],
    pub(super) flags: &'static [&'static str],
    pub(super) named: bool,
}

/// The arguments' lists, in order.
pub(super) const KINDS: [Kind; 3] = [EVENTS, OPS, SYNCS];

/// A CPU op or runtime call ([`Event`]).
const EVENTS: Kind = Kind {
    list: "events",
    ints: &["idx", "pid", "tid", "ts", "end_ts", "stack_tid"],
    flags: &["is_lock", "is_blocking"],
    named: true,
};
/// A GPU op ([`Op`]).
const OPS: Kind = Kind {
    list: "ops",
    ints: &[
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
        "correlation_id",
    ],
    flags: &["is_graph", "is_comm"],
    named: true,
};
/// A [`Sync`].
const SYNCS: Kind = Kind {
    list: "syncs",
    ints: &["sync_type", "call", "stream_id", "source", "source_end"],
    flags: &[],
    named: false,
};

impl Kind {
    /// The struct fields of this kind's argument, or an error that names what is missing.
    pub(super) fn fields<'a>(&self, arg: &'a DataType) -> DfResult<&'a Fields> {
        let fields = match arg {
            DataType::List(item) => match item.data_type() {
                DataType::Struct(fields) => Some(fields),
                _ => None,
            },
            _ => None,
        };
        let name: &[&str] = if self.named { &["name"] } else { &[] };
        let all = || self.ints.iter().chain(self.flags).chain(name);
        match all().find(|f| fields.is_none_or(|s| s.find(f).is_none())) {
            Some(missing) => Err(DataFusionError::Plan(format!(
                "critical_path takes {} as a list of structs with the fields {:?}; {arg} has \
                 no `{missing}`",
                self.list,
                all().collect::<Vec<_>>()
            ))),
            None => Ok(fields.expect("found all fields")),
        }
    }
}

/// Each field's place in its kind's `ints` (`int::`) or `flags` (`flag::`).
mod int {
    pub const IDX: usize = 0;
    pub const PID: usize = 1;
    pub const TID: usize = 2;
    pub const TS: usize = 3;
    pub const END_TS: usize = 4;
    pub const STACK_TID: usize = 5;
    pub const DEVICE_ID: usize = 5;
    pub const STREAM_ID: usize = 6;
    pub const API_TS: usize = 7;
    pub const CALL: usize = 8;
    pub const QUEUE_AT_CALL: usize = 9;
    pub const QUEUE_AT_START: usize = 10;
    pub const CORRELATION_ID: usize = 11;
    pub const SYNC_TYPE: usize = 0;
    pub const SYNC_CALL: usize = 1;
    pub const SYNC_STREAM_ID: usize = 2;
    pub const SOURCE: usize = 3;
    pub const SOURCE_END: usize = 4;
}
mod flag {
    pub const IS_LOCK: usize = 0;
    pub const IS_BLOCKING: usize = 1;
    pub const IS_GRAPH: usize = 0;
    pub const IS_COMM: usize = 1;
}

/// One argument: a list per step of one kind of node, its struct fields cast once per batch.
pub(super) struct List {
    kind: &'static Kind,
    lists: ListArray,
    ints: Vec<Int64Array>,
    flags: Vec<BooleanArray>,
}

impl List {
    fn new(kind: &'static Kind, arg: &ArrayRef) -> DfResult<List> {
        let lists = arg.as_list_opt::<i32>().ok_or_else(|| {
            DataFusionError::Execution(format!("critical_path: not a list: {}", arg.data_type()))
        })?;
        kind.fields(arg.data_type())?;
        let items = lists.values().as_struct();
        let column = |name: &str, to: &DataType| -> DfResult<ArrayRef> {
            Ok(cast(items.column_by_name(name).expect("checked"), to)?)
        };
        Ok(List {
            kind,
            lists: lists.clone(),
            ints: (kind.ints.iter())
                .map(|n| {
                    Ok(column(n, &DataType::Int64)?
                        .as_primitive::<Int64Type>()
                        .clone())
                })
                .collect::<DfResult<_>>()?,
            flags: (kind.flags.iter())
                .map(|n| Ok(column(n, &DataType::Boolean)?.as_boolean().clone()))
                .collect::<DfResult<_>>()?,
        })
    }

    /// The items of row `row`'s list (none for a NULL list: a step without such nodes).
    fn items(&self, row: usize) -> std::ops::Range<usize> {
        if self.lists.is_null(row) {
            return 0..0;
        }
        let offsets = self.lists.value_offsets();
        offsets[row] as usize..offsets[row + 1] as usize
    }

    fn names(&self) -> ArrayRef {
        let items = self.lists.values().as_struct();
        items.column_by_name("name").expect("checked").clone()
    }

    fn int(&self, field: usize, i: usize) -> Option<i64> {
        let column = &self.ints[field];
        column.is_valid(i).then(|| column.value(i))
    }

    /// A number that the graph's rules need: NULL is an error that names it.
    fn req(&self, field: usize, i: usize) -> DfResult<i64> {
        self.int(field, i).ok_or_else(|| {
            DataFusionError::Execution(format!(
                "critical_path: one of the {} without its `{}`",
                self.kind.list, self.kind.ints[field]
            ))
        })
    }

    fn flag(&self, field: usize, i: usize) -> bool {
        let column = &self.flags[field];
        column.is_valid(i) && column.value(i)
    }
}

/// The arguments: a batch of steps' events, ops and syncs. A node's `row` numbers it among
/// the batch's named nodes: the events' items, then the ops' (`op_rows` on).
pub(super) struct Nodes {
    events: List,
    ops: List,
    syncs: List,
    op_rows: usize,
    /// the named nodes' names, by row, as the events' names are typed
    pub(super) names: ArrayRef,
}

impl Nodes {
    pub(super) fn new([events, ops, syncs]: [&ArrayRef; 3]) -> DfResult<Nodes> {
        let [event_kind, op_kind, sync_kind] = &KINDS;
        let (events, ops) = (List::new(event_kind, events)?, List::new(op_kind, ops)?);
        let event_names = events.names();
        let op_names = cast(&ops.names(), event_names.data_type())?;
        Ok(Nodes {
            op_rows: event_names.len(),
            names: concat(&[event_names.as_ref(), op_names.as_ref()])?,
            syncs: List::new(sync_kind, syncs)?,
            events,
            ops,
        })
    }

    /// Row `row`'s step: its nodes, by kind, and what its syncs waited for.
    pub(super) fn step(&self, row: usize) -> DfResult<Step> {
        let events: Vec<Event> = (self.events.items(row))
            .map(|i| Event::read(&self.events, i))
            .collect::<DfResult<_>>()?;
        let mut ops: Vec<Op> = (self.ops.items(row))
            .map(|i| Op::read(&self.ops, i, self.op_rows + i))
            .collect::<DfResult<_>>()?;
        // the ops' edges are numbered in idx order
        ops.sort_unstable_by_key(|g| g.idx);
        link_lanes(&mut ops);
        let syncs: Vec<Sync> = (self.syncs.items(row))
            .map(|i| read_sync(&self.syncs, i))
            .collect::<DfResult<_>>()?;
        Ok(Step {
            waits: waits(&syncs, &events, &ops),
            events,
            ops,
        })
    }
}

/// A CPU op or runtime call; `row`, its place in the batch's named nodes (for its name).
pub(super) struct Event {
    pub(super) row: usize,
    pub(super) idx: i64,
    pub(super) pid: Option<i64>,
    pub(super) tid: Option<i64>,
    /// the thread whose call stack it is on: `tid`, or the forward thread's for an event of
    /// the backward thread (HTA's merge of the two)
    pub(super) stack_tid: Option<i64>,
    pub(super) ts: i64,
    pub(super) end_ts: i64,
    pub(super) is_lock: bool,
    pub(super) is_blocking: bool,
}

impl Event {
    fn read(n: &List, i: usize) -> DfResult<Event> {
        Ok(Event {
            row: i,
            idx: n.req(int::IDX, i)?,
            pid: n.int(int::PID, i),
            tid: n.int(int::TID, i),
            stack_tid: n.int(int::STACK_TID, i),
            ts: n.req(int::TS, i)?,
            end_ts: n.req(int::END_TS, i)?,
            is_lock: n.flag(flag::IS_LOCK, i),
            is_blocking: n.flag(flag::IS_BLOCKING, i),
        })
    }
}

/// A GPU op, with its launch call (`call`, a CPU event's idx) and the op before it on its
/// lane (device and stream; [`link_lanes`]).
pub(super) struct Op {
    pub(super) row: usize,
    pub(super) idx: i64,
    pub(super) pid: Option<i64>,
    pub(super) tid: Option<i64>,
    pub(super) ts: i64,
    pub(super) end_ts: i64,
    pub(super) device_id: Option<i64>,
    pub(super) stream_id: Option<i64>,
    pub(super) api_ts: i64,
    pub(super) call: i64,
    pub(super) queue_at_call: Option<i64>,
    pub(super) queue_at_start: Option<i64>,
    /// launched by `cudaGraphLaunch` (an op of a graph replay), and the launch's correlation
    pub(super) is_graph: bool,
    pub(super) correlation_id: Option<i64>,
    pub(super) prev_idx: Option<i64>,
    pub(super) prev_end: Option<i64>,
    pub(super) replay_start: bool,
    pub(super) is_comm: bool,
}

impl Op {
    fn read(n: &List, i: usize, row: usize) -> DfResult<Op> {
        Ok(Op {
            row,
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
            is_graph: n.flag(flag::IS_GRAPH, i),
            correlation_id: n.int(int::CORRELATION_ID, i),
            // set by link_lanes
            prev_idx: None,
            prev_end: None,
            replay_start: false,
            is_comm: n.flag(flag::IS_COMM, i),
        })
    }
}

/// Each op's neighbours, `ops` in idx order: the op before it on its lane (device and
/// stream, in time order; none on a lane without a device or stream), and whether it opens
/// a CUDA-graph replay there (the first op, by idx, of a `cudaGraphLaunch` on its lane; beyond
/// HTA, which keeps one op per replay and no launch edge: this one waits for its launch).
/// In SQL these were a window over each step's ops by lane and a grouping of the replays,
/// each over its own copy of the step's GPU ops (0.8 s of compute at 1 M events).
fn link_lanes(ops: &mut [Op]) {
    type Replay = (Option<i64>, Option<i64>, Option<i64>);
    let mut replay_first: HashMap<Replay, usize, foldhash::fast::FixedState> = Default::default();
    for (i, g) in ops.iter().enumerate().filter(|(_, g)| g.is_graph) {
        replay_first
            .entry((g.correlation_id, g.device_id, g.stream_id))
            .or_insert(i);
    }
    for i in replay_first.into_values() {
        ops[i].replay_start = true;
    }
    let mut lane_order: Vec<usize> = (0..ops.len()).collect();
    lane_order.sort_unstable_by_key(|&i| {
        let g = &ops[i];
        (
            nulls_last(g.device_id),
            nulls_last(g.stream_id),
            g.ts,
            g.idx,
        )
    });
    for pair in lane_order.windows(2) {
        let (p, g) = (&ops[pair[0]], &ops[pair[1]]);
        let same_lane = g.device_id.is_some()
            && g.stream_id.is_some()
            && (p.device_id, p.stream_id) == (g.device_id, g.stream_id);
        if same_lane {
            let (prev_idx, prev_end) = (p.idx, p.end_ts);
            let g = &mut ops[pair[1]];
            (g.prev_idx, g.prev_end) = (Some(prev_idx), Some(prev_end));
        }
    }
}

/// SQL's `ORDER BY x NULLS LAST` for a nullable number.
pub(super) fn nulls_last(v: Option<i64>) -> (bool, i64) {
    (v.is_none(), v.unwrap_or(0))
}

fn read_sync(n: &List, i: usize) -> DfResult<Sync> {
    Ok(Sync {
        sync_type: n.req(int::SYNC_TYPE, i)?,
        call: n.req(int::SYNC_CALL, i)?,
        stream_id: n.int(int::SYNC_STREAM_ID, i),
        source: n.int(int::SOURCE, i),
        source_end: n.int(int::SOURCE_END, i),
    })
}

#[cfg(test)]
impl Op {
    /// An op on device 0, stream 7, launched at 0 by call 1 onto an empty queue.
    pub(super) fn example(row: usize, idx: i64, (ts, end_ts): (i64, i64)) -> Op {
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
            is_graph: false,
            correlation_id: Some(idx),
            prev_idx: None,
            prev_end: None,
            replay_start: false,
            is_comm: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_follows_the_op_before_it_on_its_lane_and_a_replay_opens_once_a_lane() {
        // stream 7: a [0, 5), then replay r (ops b [6, 8), c [9, 10)); stream 8: d [1, 2),
        // also of r; an op without a stream has no lane
        let mut ops: Vec<Op> = [(10, (0, 5)), (11, (1, 2)), (12, (6, 8)), (13, (9, 10))]
            .into_iter()
            .enumerate()
            .map(|(row, (idx, span))| Op::example(row, idx, span))
            .collect();
        ops[1].stream_id = Some(8);
        for g in &mut ops[1..] {
            (g.is_graph, g.correlation_id) = (true, Some(99));
        }
        let mut lost = Op::example(4, 14, (3, 4));
        lost.stream_id = None;
        ops.push(lost);
        link_lanes(&mut ops);
        let prev: Vec<_> = ops.iter().map(|g| (g.prev_idx, g.prev_end)).collect();
        let (none, after) = ((None, None), |idx, end| (Some(idx), Some(end)));
        assert_eq!(prev, [none, none, after(10, 5), after(12, 8), none]);
        let replay_start: Vec<bool> = ops.iter().map(|g| g.replay_start).collect();
        assert_eq!(replay_start, [false, true, true, false, false]);
    }

    #[test]
    fn each_field_position_names_its_field() {
        let ints = [
            (&EVENTS, int::IDX, "idx"),
            (&EVENTS, int::PID, "pid"),
            (&EVENTS, int::TID, "tid"),
            (&EVENTS, int::TS, "ts"),
            (&EVENTS, int::END_TS, "end_ts"),
            (&EVENTS, int::STACK_TID, "stack_tid"),
            (&OPS, int::IDX, "idx"),
            (&OPS, int::PID, "pid"),
            (&OPS, int::TID, "tid"),
            (&OPS, int::TS, "ts"),
            (&OPS, int::END_TS, "end_ts"),
            (&OPS, int::DEVICE_ID, "device_id"),
            (&OPS, int::STREAM_ID, "stream_id"),
            (&OPS, int::API_TS, "api_ts"),
            (&OPS, int::CALL, "call"),
            (&OPS, int::QUEUE_AT_CALL, "queue_at_call"),
            (&OPS, int::QUEUE_AT_START, "queue_at_start"),
            (&OPS, int::CORRELATION_ID, "correlation_id"),
            (&SYNCS, int::SYNC_TYPE, "sync_type"),
            (&SYNCS, int::SYNC_CALL, "call"),
            (&SYNCS, int::SYNC_STREAM_ID, "stream_id"),
            (&SYNCS, int::SOURCE, "source"),
            (&SYNCS, int::SOURCE_END, "source_end"),
        ];
        for (kind, at, name) in ints {
            assert_eq!(kind.ints[at], name, "{}", kind.list);
        }
        let flags = [
            (&EVENTS, flag::IS_LOCK, "is_lock"),
            (&EVENTS, flag::IS_BLOCKING, "is_blocking"),
            (&OPS, flag::IS_GRAPH, "is_graph"),
            (&OPS, flag::IS_COMM, "is_comm"),
        ];
        for (kind, at, name) in flags {
            assert_eq!(kind.flags[at], name, "{}", kind.list);
        }
    }
}
