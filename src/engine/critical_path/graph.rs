//! The edges of one step's graph, made from its nodes by the rules in the module above.

use std::cmp::Reverse;
use std::collections::HashMap;

use super::nodes::{nulls_last, Event, Op};
use super::syncs::Wait;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Type {
    Operator,
    Dependency,
    Launch,
    KernelKernel,
    Sync,
}

impl Type {
    pub(super) fn text(self) -> &'static str {
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

pub(super) struct Edge {
    pub(super) pass: i64,
    pub(super) seq: i64,
    pub(super) pid: Option<i64>,
    pub(super) tid: Option<i64>,
    pub(super) src: i64,
    pub(super) dst: i64,
    pub(super) ts: i64,
    pub(super) end_ts: i64,
    pub(super) kind: Type,
    pub(super) weight: i64,
    /// the node whose name the edge carries, as its row in the batch's nodes
    pub(super) name: Option<usize>,
    pub(super) device_id: Option<i64>,
    pub(super) stream_id: Option<i64>,
    pub(super) bound_by: Option<&'static str>,
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

/// A node number: `idx * 2` for a start, `idx * 2 + 1` for an end.
fn node(idx: i64, is_start: bool) -> i64 {
    idx * 2 + i64::from(!is_start)
}

#[derive(Default)]
pub(super) struct Step {
    pub(super) events: Vec<Event>,
    pub(super) ops: Vec<Op>,
    pub(super) waits: Vec<Wait>,
}

impl Step {
    /// Every edge of the step's graph, in `edge_id` order.
    pub(super) fn edges(&self) -> Vec<Edge> {
        let mut edges = Vec::with_capacity(self.events.len() * 2 + self.ops.len() * 2);
        let markers = self.markers();
        self.lock_edges(&markers, &mut edges);
        self.stack_edges(&markers, &mut edges);
        self.gpu_edges(&mut edges);
        self.call_waits(&mut edges);
        // made in order but for a step's waits of several ops (a sort moves ~200 bytes an
        // edge); stable, so ties (the waits of one op) stay as made
        if !edges.is_sorted_by_key(Edge::order) {
            edges.sort_by_key(Edge::order);
        }
        edges
    }

    /// Each GPU op's row in the batch's nodes, by idx.
    fn op_rows(&self) -> FastMap<usize> {
        self.ops.iter().map(|g| (g.idx, g.row)).collect()
    }

    /// Every event's start and end, in call-stack order thread by thread (by `stack_tid`: the
    /// backward thread's on the forward thread's stack, as HTA merges them): at one time ends
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
                nulls_last(e.stack_tid),
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
                (pe.pid, pe.stack_tid) == (e.pid, e.stack_tid)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn event(row: usize, idx: i64, tid: i64, (ts, end_ts): (i64, i64), is_lock: bool) -> Event {
        Event {
            row,
            idx,
            pid: Some(1),
            tid: Some(tid),
            stack_tid: Some(tid),
            ts,
            end_ts,
            is_lock,
            is_blocking: false,
        }
    }

    /// The step's edges as (type, src, dst, weight, name row), in edge_id order.
    fn edges(step: &Step) -> Vec<(&'static str, i64, i64, i64, Option<usize>)> {
        (step.edges().iter())
            .map(|e| (e.kind.text(), e.src, e.dst, e.weight, e.name))
            .collect()
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
    fn a_backward_thread_merged_into_the_forward_thread_continues_its_call_stack() {
        // forward A [0, 4) on thread 1, then backward B [6, 9) on thread 2, on thread 1's
        // stack (HTA's merge): one stack, B after A; unmerged, two stacks and no edge between
        let mut step = Step {
            events: vec![
                event(0, 10, 1, (0, 4), false),
                event(1, 11, 2, (6, 9), false),
            ],
            ..Step::default()
        };
        let (a, b) = (20, 22);
        assert_eq!(
            edges(&step),
            vec![
                ("operator", a, a + 1, 4, Some(0)),
                ("operator", b, b + 1, 3, Some(1))
            ]
        );
        step.events[1].stack_tid = Some(1);
        assert_eq!(
            edges(&step),
            vec![
                ("operator", a, a + 1, 4, Some(0)),
                ("dependency", a + 1, b, 0, None),
                ("operator", b, b + 1, 3, Some(1)),
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
            prev_idx: prev.map(|p| p.0),
            prev_end: prev.map(|p| p.1),
            ..Op::example(row, idx, (ts, end_ts))
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
