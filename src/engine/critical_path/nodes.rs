//! The nodes of a batch of steps, as `critical_path` gets them: one list per step of
//! structs, each a CPU event, a GPU op or a wait (`kind`), read into [`Step`]s.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, ListArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};

use std::collections::HashMap;

use super::graph::Step;

/// The nodes' fields: numbers (read as BIGINT; NULL where a kind has no such field) and
/// flags (BOOLEAN, NULL read as false, as SQL's WHERE and CASE take it), then `name`.
/// `kind` says which of the three a node is.
pub(super) const INTS: [&str; 16] = [
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
    "correlation_id",
    "source",
    "source_end",
    "target",
];
pub(super) const FLAGS: [&str; 5] = ["is_lock", "is_blocking", "is_graph", "is_comm", "is_op"];
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
    pub const CORRELATION_ID: usize = 12;
    pub const SOURCE: usize = 13;
    pub const SOURCE_END: usize = 14;
    pub const TARGET: usize = 15;
}
mod flag {
    pub const IS_LOCK: usize = 0;
    pub const IS_BLOCKING: usize = 1;
    pub const IS_GRAPH: usize = 2;
    pub const IS_COMM: usize = 3;
    pub const IS_OP: usize = 4;
}
/// `kind`: a CPU op or runtime call (an [`Event`]), a GPU op ([`Op`]), a [`Wait`].
const CPU: i64 = 0;
const GPU: i64 = 1;
const WAIT: i64 = 2;

/// The argument: one list of nodes per step, its struct fields cast once per batch.
pub(super) struct Nodes {
    pub(super) lists: ListArray,
    pub(super) ints: Vec<Int64Array>,
    pub(super) flags: Vec<BooleanArray>,
    pub(super) names: ArrayRef,
}

impl Nodes {
    pub(super) fn new(arg: &ArrayRef) -> DfResult<Nodes> {
        let lists = arg.as_list_opt::<i32>().ok_or_else(|| {
            DataFusionError::Execution(format!("critical_path: not a list: {}", arg.data_type()))
        })?;
        let items = lists.values().as_struct();
        let column = |name: &str, to: &DataType| -> DfResult<ArrayRef> {
            let column = items.column_by_name(name).ok_or_else(|| {
                DataFusionError::Execution(format!("critical_path: no field `{name}`"))
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
    pub(super) fn step(&self, row: usize) -> DfResult<Step> {
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
                        "critical_path: no node kind {other}"
                    )))
                }
            }
        }
        // the ops' edges are numbered in idx order
        step.ops.sort_unstable_by_key(|g| g.idx);
        link_lanes(&mut step.ops);
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
                "critical_path: a node without its `{}`",
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
pub(super) struct Event {
    pub(super) row: usize,
    pub(super) idx: i64,
    pub(super) pid: Option<i64>,
    pub(super) tid: Option<i64>,
    pub(super) ts: i64,
    pub(super) end_ts: i64,
    pub(super) is_lock: bool,
    pub(super) is_blocking: bool,
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

/// What a wait waited for (`source`, a GPU op, and its end) and what waited (`target`: a GPU
/// op's idx if `is_op`, else a synchronizing call's).
pub(super) struct Wait {
    pub(super) is_op: bool,
    pub(super) source: i64,
    pub(super) source_end: i64,
    pub(super) target: i64,
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
            (int::CORRELATION_ID, "correlation_id"),
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
            (flag::IS_GRAPH, "is_graph"),
            (flag::IS_COMM, "is_comm"),
            (flag::IS_OP, "is_op"),
        ];
        for (at, name) in flags {
            assert_eq!(FLAGS[at], name);
        }
    }
}
