//! What each synchronization of a step waited for, or what waited for it, found among the
//! step's GPU ops. SQL gives each sync call with what the window's records say
//! (`_cp_sync`); the rest is a look-up in the step's ops by lane, thread or process. In SQL
//! these were three windows (`last_seen` over each lane's ops and syncs, each thread's
//! launches and stream waits, each process's op ends and inferred calls), each sorting its
//! own copy of every step's ops.

use std::collections::HashMap;

use super::nodes::{Event, Op};

/// `sync_type`, as cuda_sync's, but 5.
pub(super) mod sync_type {
    /// cudaEventSynchronize: the call waits for `source`, the op before the event's record
    pub const EVENT: i64 = 1;
    /// cudaStreamWaitEvent: the first op its thread launched onto `stream_id` after it waits
    /// for `source`
    pub const STREAM_WAIT: i64 = 2;
    /// cudaStreamSynchronize: the call waits for the last op that started before it ended, on
    /// each lane of `stream_id`
    pub const STREAM: i64 = 3;
    /// cudaDeviceSynchronize: as a stream sync, on every lane of the step
    pub const CONTEXT: i64 = 4;
    /// a sync call of a window without cuda_sync records (not a CUPTI type): it waits for the
    /// op of its process that ended last while it ran, if one did
    pub const INFERRED: i64 = 5;
}

/// A synchronizing call (`call`, an event's idx) as SQL found it.
pub(super) struct Sync {
    pub(super) sync_type: i64,
    pub(super) call: i64,
    pub(super) stream_id: Option<i64>,
    pub(super) source: Option<i64>,
    pub(super) source_end: Option<i64>,
}

/// What a wait waited for (`source`, a GPU op, and its end) and what waited (`target`: a GPU
/// op's idx if `is_op`, else a synchronizing call's).
pub(super) struct Wait {
    pub(super) is_op: bool,
    pub(super) source: i64,
    pub(super) source_end: i64,
    pub(super) target: i64,
}

type Key = (Option<i64>, Option<i64>, Option<i64>);
/// Ops grouped by a key, each group sorted by (time, idx): (time, idx, end).
type Groups = HashMap<Key, Vec<(i64, i64, i64)>, foldhash::fast::FixedState>;

fn groups<'a>(ops: impl Iterator<Item = &'a Op>, by: impl Fn(&Op) -> (Key, i64)) -> Groups {
    let mut groups = Groups::default();
    for g in ops {
        let (key, t) = by(g);
        groups.entry(key).or_default().push((t, g.idx, g.end_ts));
    }
    for ops in groups.values_mut() {
        ops.sort_unstable();
    }
    groups
}

/// The last of `ops` (sorted by time, then idx) before time `t` (at `t` too if `inclusive`).
fn last_before(ops: &[(i64, i64, i64)], t: i64, inclusive: bool) -> Option<(i64, i64, i64)> {
    let after = ops.partition_point(|&(at, _, _)| at < t || (inclusive && at == t));
    after.checked_sub(1).map(|i| ops[i])
}

/// The step's waits, from its syncs (`events` and `ops` are the step's; `ops` in idx order).
/// Op waits come in the order of their syncs.
pub(super) fn waits(syncs: &[Sync], events: &[Event], ops: &[Op]) -> Vec<Wait> {
    let mut waits = Vec::with_capacity(syncs.len());
    if syncs.is_empty() {
        return waits;
    }
    let call_of: HashMap<i64, &Event, foldhash::fast::FixedState> =
        events.iter().map(|e| (e.idx, e)).collect();
    let has = |t: i64| syncs.iter().any(|y| y.sync_type == t);
    // a thread's launches onto a stream (queued ones), by launch call start
    let launches = has(sync_type::STREAM_WAIT).then(|| {
        let queued = ops.iter().filter(|g| g.queue_at_call.is_some());
        groups(queued, |g| ((g.stream_id, g.pid, g.tid), g.api_ts))
    });
    // each lane's ops by start
    let lanes = (has(sync_type::STREAM) || has(sync_type::CONTEXT))
        .then(|| groups(ops.iter(), |g| ((g.device_id, g.stream_id, None), g.ts)));
    // each process's ops by end
    let ends =
        has(sync_type::INFERRED).then(|| groups(ops.iter(), |g| ((g.pid, None, None), g.end_ts)));
    for y in syncs {
        let Some(call) = call_of.get(&y.call) else {
            continue;
        };
        let waited = |(_, source, source_end): (i64, i64, i64)| Wait {
            is_op: false,
            source,
            source_end,
            target: y.call,
        };
        match y.sync_type {
            sync_type::EVENT => {
                if let (Some(source), Some(source_end)) = (y.source, y.source_end) {
                    waits.push(waited((0, source, source_end)));
                }
            }
            sync_type::STREAM_WAIT => {
                let (Some(source), Some(source_end)) = (y.source, y.source_end) else {
                    continue;
                };
                let thread = (y.stream_id, call.pid, call.tid);
                let launched = launches.as_ref().and_then(|l| l.get(&thread));
                // the first launch that started after the call did
                let next = launched.and_then(|l| {
                    let after = l.partition_point(|&(at, _, _)| at <= call.ts);
                    l.get(after)
                });
                if let Some(&(_, target, _)) = next {
                    waits.push(Wait {
                        is_op: true,
                        source,
                        source_end,
                        target,
                    });
                }
            }
            sync_type::STREAM | sync_type::CONTEXT => {
                let lanes = lanes.as_ref().expect("made for these syncs");
                let mut synced: Vec<_> = (lanes.iter())
                    .filter(|((_, stream, _), _)| {
                        y.sync_type == sync_type::CONTEXT
                            || (y.stream_id.is_some() && *stream == y.stream_id)
                    })
                    .filter_map(|(_, ops)| last_before(ops, call.end_ts, false))
                    .collect();
                // in one order whatever the map's
                synced.sort_unstable();
                waits.extend(synced.into_iter().map(waited));
            }
            sync_type::INFERRED => {
                let ended = ends.as_ref().and_then(|e| e.get(&(call.pid, None, None)));
                let last = ended.and_then(|ops| last_before(ops, call.end_ts, true));
                if let Some(last) = last.filter(|&(end, _, _)| end >= call.ts) {
                    waits.push(waited(last));
                }
            }
            _ => {}
        }
    }
    waits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(idx: i64, (ts, end_ts): (i64, i64)) -> Event {
        Event {
            row: 0,
            idx,
            pid: Some(1),
            tid: Some(1),
            stack_tid: Some(1),
            ts,
            end_ts,
            is_lock: false,
            is_blocking: true,
        }
    }

    fn sync(sync_type: i64, call: i64, stream_id: Option<i64>, source: Option<i64>) -> Sync {
        Sync {
            sync_type,
            call,
            stream_id,
            source,
            source_end: source.map(|s| s * 10),
        }
    }

    /// (is_op, source, source_end, target) of each wait
    fn found(waits: &[Wait]) -> Vec<(bool, i64, i64, i64)> {
        (waits.iter())
            .map(|w| (w.is_op, w.source, w.source_end, w.target))
            .collect()
    }

    #[test]
    fn a_stream_sync_waits_for_the_last_op_started_before_it_ended_on_each_lane() {
        // stream 7 on devices 0 and 1, stream 8 on device 0; the call ends at 10
        let mut ops: Vec<Op> = [(20, (2, 4)), (21, (9, 30)), (22, (10, 11)), (23, (5, 6))]
            .into_iter()
            .map(|(idx, span)| Op::example(0, idx, span))
            .collect();
        ops[1].stream_id = Some(8);
        ops[3].device_id = Some(1);
        let events = [event(1, (0, 10))];
        let stream = found(&waits(&[sync(3, 1, Some(7), None)], &events, &ops));
        // op 22 started as the call ended: not before it
        assert_eq!(stream, [(false, 20, 4, 1), (false, 23, 6, 1)]);
        let context = found(&waits(&[sync(4, 1, None, None)], &events, &ops));
        assert_eq!(
            context,
            [(false, 20, 4, 1), (false, 23, 6, 1), (false, 21, 30, 1)]
        );
        // a stream sync without its stream waits for nothing
        assert!(waits(&[sync(3, 1, None, None)], &events, &ops).is_empty());
    }

    #[test]
    fn a_stream_wait_is_for_its_threads_first_launch_onto_the_stream_after_it() {
        // launches onto stream 7 by thread 1 at 5 (idx 31), 5 (idx 30), 2 (32); at 9 by
        // thread 2 (33); at 6 onto stream 8 (34); the wait's call starts at 3 (idx 1)
        let mut ops: Vec<Op> = [(30, 5), (31, 5), (32, 2), (33, 9), (34, 6)]
            .into_iter()
            .map(|(idx, api_ts)| Op {
                api_ts,
                ..Op::example(0, idx, (20, 21))
            })
            .collect();
        ops[3].tid = Some(2);
        ops[4].stream_id = Some(8);
        let events = [event(1, (3, 4)), event(2, (5, 6))];
        let y = [sync(2, 1, Some(7), Some(99))];
        assert_eq!(found(&waits(&y, &events, &ops)), [(true, 99, 990, 30)]);
        // a wait that starts with a launch does not take it; none after: no wait
        let y = [sync(2, 2, Some(7), Some(99))];
        assert!(waits(&y, &events, &ops).is_empty());
    }

    #[test]
    fn an_inferred_sync_waits_for_its_processs_op_that_ended_last_while_it_ran() {
        // the call runs [10, 20]; ops end at 15, 20 (two, idx 41 and 42), 25; process 2's at 18
        let mut ops: Vec<Op> = [(40, 15), (42, 20), (41, 20), (43, 25), (44, 18)]
            .into_iter()
            .map(|(idx, end)| Op::example(0, idx, (0, end)))
            .collect();
        ops[4].pid = Some(2);
        let events = [event(1, (10, 20)), event(2, (16, 17))];
        let y = [sync(5, 1, None, None)];
        assert_eq!(found(&waits(&y, &events, &ops)), [(false, 42, 20, 1)]);
        // nothing of its process ended while call 2 ran
        assert!(waits(&[sync(5, 2, None, None)], &events, &ops).is_empty());
        // an event sync takes what SQL found
        let y = [sync(1, 2, None, Some(7))];
        assert_eq!(found(&waits(&y, &events, &ops)), [(false, 7, 70, 2)]);
    }
}
