-- critical_path_graph: the graph of HTA's lightweight critical path and its heaviest path,
-- one per analyzed range (step), built as a script of tables that the critical path reports
-- include and read: each stage is computed once and read
-- as a table, since as one query of CTEs DataFusion planned every stage again for each of its
-- readers (20 s of planning for a 59-event trace).
--
-- A start and an end node for every CPU op, runtime or driver call and GPU op of the range
-- (CPU events that start in it, GPU ops whose launch call does), and edges that say what must
-- happen before what. SQL gathers the nodes and the syncs; engine::critical_path makes the
-- edges and finds the path, a step at a time (docs/reports.md has the rules and where they
-- differ from HTA's):
-- - on a thread, the ops in call-stack order (weight: the time between the two nodes; 0 from a
--   top-level op to the next, and 0 up to the end of a blocking call, whose wait the GPU side
--   carries); a step's backward thread counts as its forward thread here (_cp_thread_merge);
-- - the CUDA runtime lock: cudaLaunchKernel, cudaMemcpyAsync and cudaHostAlloc calls that
--   overlap on different threads run one after the other, in the order they ended;
-- - a GPU op's own time; the launch delay (call start to op start) when its stream's queue was
--   empty (or it is the first op of a graph replay on its stream), else the gap after the
--   previous op on its stream (if under 1.5 ms);
-- - waits (weight 0): the last op of a stream (every stream for a context sync) before the end
--   of cudaStreamSynchronize / cudaDeviceSynchronize; the op before an event's record before
--   the end of cudaEventSynchronize, or before the first op launched after a
--   cudaStreamWaitEvent onto the waiting stream; in a window without cuda_sync records, the
--   op of its process that ended last during a synchronizing call before that call's end.
-- The path is the heaviest chain through these edges; an edge of -1 µs or less counts 0
-- there, as in HTA, and with its own weight in `dur_ns`. A what-if (parameter `speedup`:
-- `PATTERN=FACTOR`, `;` between rules) weighs an edge whose bound_by is PATTERN, or whose
-- op's name is LIKE it, FACTOR times its own time (the smallest factor of the rules it
-- matches), and finds the path again.

-- _cp_step: the ranges, numbered from 0 in time order in each window
CREATE OR REPLACE TABLE _cp_step AS
SELECT * FROM (
  SELECT {{part}} name AS step_name, ts_ns AS step_ts, ts_ns + dur_ns AS step_end,
    ROW_NUMBER() OVER ({{partition_by_part}} ORDER BY ts_ns, event_index) - 1 AS step
  FROM cpu_event
  WHERE ph = 'X' AND cat = 'user_annotation' AND name LIKE {{param annotation}}
) WHERE {{param instance}} < 0 OR step = {{param instance}};

-- _cp_thread_merge: the ranges whose backward pass HTA moves onto the forward pass's call
-- stack: those with one thread of CPU ops or annotations named like `forward` and another,
-- the one thread of ones named like `autograd` (HTA: "backward and forward pass events are
-- typically non-overlapping", so the path can run through both passes)
CREATE OR REPLACE TABLE _cp_thread_merge AS
SELECT {{part}} step, MIN(forward) AS forward_tid, MIN(backward) AS backward_tid
FROM (
  SELECT {{part e}} s.step,
    CASE WHEN e.name LIKE '%forward%' THEN TRY_CAST(e.tid AS BIGINT) END AS forward,
    CASE WHEN e.name LIKE '%autograd%' THEN TRY_CAST(e.tid AS BIGINT) END AS backward
  FROM cpu_event e
  JOIN _cp_step s ON e.ts_ns >= s.step_ts AND e.ts_ns <= s.step_end {{same_window s e}}
  WHERE e.ph = 'X' AND e.cat IN ('cpu_op', 'user_annotation') AND e.dur_ns > 0
    AND (e.name LIKE '%forward%' OR e.name LIKE '%autograd%'))
GROUP BY {{part}} step
HAVING COUNT(DISTINCT forward) = 1 AND COUNT(DISTINCT backward) = 1
  AND MIN(forward) <> MIN(backward);

-- _cp_cpu: the CPU events of each range; `stack_tid`, the thread whose call stack an event is
-- on (its own, or the forward thread for the backward thread's events, _cp_thread_merge)
CREATE OR REPLACE TABLE _cp_cpu AS
SELECT {{part e}} s.step, e.idx, e.cat, e.name, e.pid, e.tid,
  CASE WHEN e.tid = m.backward_tid THEN m.forward_tid ELSE e.tid END AS stack_tid,
  e.ts, e.end_ts, e.correlation_id,
  e.name IN ('cudaHostAlloc', 'cudaLaunchKernel', 'cudaMemcpyAsync') AS is_lock,
  e.name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventQuery',
    'cudaEventSynchronize', 'cudaMemcpy', 'cudaMemcpyAsync') AS is_blocking
FROM _cp_cpu_event e
-- a join by containment: the engine's interval join (as a range join, DataFusion compared
-- every event with every range: 2.3 s for 1 M events and 5 k steps)
JOIN _cp_step s ON e.ts >= s.step_ts AND e.ts <= s.step_end {{same_window s e}}
LEFT JOIN _cp_thread_merge m ON m.step = s.step {{same_window m s}};

-- _cp_launch: every GPU op with its launch call and queue lengths (_cp_gpu_op), held: the GPU
-- ops and the syncs read it, and the view reads the window's launches several times over
CREATE OR REPLACE TABLE _cp_launch AS
SELECT {{part}} kind, name, ts, end_ts, device_id, stream_id, correlation_id, api_name, api_ts,
  api_end_ts, queue_at_call, queue_at_start
FROM _cp_gpu_op;

-- _cp_gpu: the GPU ops launched in each range, numbered after its CPU events, with the launch
-- call's node (`call`). The op before each on its stream, and the first op of each CUDA-graph
-- replay on its stream, are found by engine::critical_path, a step at a time.
CREATE OR REPLACE TABLE _cp_gpu AS
SELECT {{part g}} s.step,
  CAST(2199023255552 + ROW_NUMBER() OVER (PARTITION BY {{part g}} s.step
    ORDER BY g.ts, g.device_id, g.stream_id, g.correlation_id) AS BIGINT) AS idx,
  g.kind, g.name, g.ts, g.end_ts, g.device_id, g.stream_id, g.correlation_id,
  g.api_name = 'cudaGraphLaunch' AS is_graph, g.api_ts, g.queue_at_call, g.queue_at_start,
  c.idx AS call, c.pid, c.tid
FROM _cp_launch g
JOIN _cp_step s ON g.api_ts >= s.step_ts AND g.api_ts <= s.step_end
  AND g.api_end_ts > g.api_ts {{same_window s g}}
JOIN (SELECT * FROM _cp_cpu WHERE correlation_id IS NOT NULL) c
  ON c.step = s.step AND c.correlation_id = g.correlation_id {{same_window c g}};

-- _cp_sync: the synchronizations of each range, with what the records say of them;
-- engine::critical_path finds among the range's ops what each waited for, or what waited
-- (the last op of each lane, the first launch of a thread, the last op of a process: in SQL,
-- three windows that each sorted their own copy of every range's ops). `sync_type` as
-- cuda_sync's: 1 cudaEventSynchronize (its end waits for `source`, the op before the event's
-- record), 2 cudaStreamWaitEvent (the first op its thread launched onto `stream_id` after it
-- waits for `source`), 3 cudaStreamSynchronize (its end waits for the last op of each lane of
-- `stream_id` that started before it ended), 4 cudaDeviceSynchronize (that of every lane); and
-- 5, a sync call of a window without cuda_sync records (parameter infer_syncs; beyond HTA,
-- which then has no waits): it waited for the op of its process that ended last while it ran,
-- if one did, since the calls do not say which stream or event they waited on.
CREATE OR REPLACE TABLE _cp_sync AS
WITH sync AS (
  SELECT {{part y}} c.step, y.sync_type, y.stream_id, c.idx AS call,
    e.device_id AS record_device, e.stream_id AS record_stream, r.ts AS record_ts
  FROM cuda_sync y
  JOIN _cp_cpu c ON c.correlation_id = y.correlation_id {{same_window c y}}
  LEFT JOIN cuda_event e ON y.cuda_event_sync_id <> 0
    AND e.cuda_event_sync_id = y.cuda_event_sync_id {{same_window e y}}
  LEFT JOIN api_call r ON r.correlation_id = e.correlation_id {{same_window r e}}
  WHERE y.sync_type IN (1, 2, 3, 4)
),
-- an event's source: the op launched last on the recorded stream before the record call
-- (from any thread), if it is an op of the range. Each record takes the last launch before it
-- in one pass over the stream's launches and records (a join of records with every launch
-- before them ran out of memory on HTA's CUDA-graph trace).
record_last AS (
  SELECT * FROM (
    SELECT *, last_seen(launched) OVER (PARTITION BY {{part}} device_id, stream_id
      ORDER BY t, o, launched ROWS UNBOUNDED PRECEDING) AS source_correlation
    FROM (
      SELECT {{part}} device_id, stream_id, api_ts AS t, 0 AS o, correlation_id AS launched,
        CAST(NULL AS BIGINT) AS step, CAST(NULL AS BIGINT) AS call
      FROM _cp_launch WHERE queue_at_call IS NOT NULL
      UNION ALL
      SELECT {{part}} record_device, record_stream, record_ts, 1, NULL, step, call
      FROM sync WHERE sync_type IN (1, 2)))
  WHERE call IS NOT NULL
),
record_source AS (
  SELECT {{part y}} y.step, y.sync_type, y.call, y.stream_id, g.idx AS source,
    g.end_ts AS source_end
  FROM sync y
  JOIN record_last r ON r.step = y.step AND r.call = y.call {{same_window r y}}
  JOIN _cp_gpu g ON g.step = y.step AND g.correlation_id = r.source_correlation {{same_window g y}}
),
inferred_call AS (
  SELECT {{part c}} c.step, c.idx
  FROM _cp_cpu c
  LEFT JOIN (SELECT DISTINCT {{part}} true AS recorded FROM cuda_sync) y ON true
    {{same_window y c}}
  WHERE {{param infer_syncs}} <> 0 AND y.recorded IS NULL
    AND c.name IN ('cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaDeviceSynchronize')
)
SELECT {{part}} step, sync_type, call, stream_id, source, source_end FROM record_source
UNION ALL
SELECT {{part}} step, sync_type, call, stream_id, NULL, NULL FROM sync
WHERE sync_type IN (3, 4)
UNION ALL
SELECT {{part}} step, 5, idx, NULL, NULL, NULL FROM inferred_call;

-- _cp_path: the path of each range, segment by segment (`position` from 0), found by
-- engine::critical_path from the range's nodes (a list each of its CPU events, GPU ops and
-- syncs; the graph's rules are in the header above and in that module) under the what-if's
-- weights (parameter `speedup`); `measured_ns`, the length of the path as measured (for a
-- what-if only). The edges stay inside the function: as a table they were unnested, held,
-- aggregated again for the path and joined back to it. Three narrow lists, not one of all
-- three kinds: array_agg copies each list twice, and one list of all carried 23 fields a node.
CREATE OR REPLACE TABLE _cp_path AS
WITH events AS (
  SELECT {{part}} step, array_agg(named_struct('idx', idx, 'name', name, 'pid', pid,
    'tid', tid, 'stack_tid', stack_tid, 'ts', ts, 'end_ts', end_ts, 'is_lock', is_lock,
    'is_blocking', is_blocking)) AS events
  FROM _cp_cpu
  GROUP BY {{part}} step
),
ops AS (
  SELECT {{part}} step, array_agg(named_struct('idx', idx, 'name', name, 'pid', pid,
    'tid', tid, 'ts', ts, 'end_ts', end_ts, 'device_id', device_id, 'stream_id', stream_id,
    'api_ts', api_ts, 'call', call, 'queue_at_call', queue_at_call,
    'queue_at_start', queue_at_start, 'correlation_id', correlation_id, 'is_graph', is_graph,
    -- HTA's communication kernels, matched by name (bound_by gpu_communication)
    'is_comm', name LIKE 'nccl%' OR name LIKE '%ncclKernel%' OR name LIKE 'hccl%'
      OR name LIKE 'hip%')) AS ops
  FROM _cp_gpu
  GROUP BY {{part}} step
),
syncs AS (
  SELECT {{part}} step, array_agg(named_struct('sync_type', sync_type, 'call', call,
    'stream_id', stream_id, 'source', source, 'source_end', source_end)) AS syncs
  FROM _cp_sync
  GROUP BY {{part}} step
),
path AS (
  -- a range's ops and syncs hang on its CPU events' calls; not every range has them
  SELECT {{part e}} e.step, unnest(critical_path(e.events, o.ops, y.syncs, {{param speedup}})) AS p
  FROM events e
  LEFT JOIN ops o ON o.step = e.step {{same_window o e}}
  LEFT JOIN syncs y ON y.step = e.step {{same_window y e}}
)
SELECT {{part}} step, p['position'] AS position, p['type'] AS type,
  -- what the time was spent on (HTA's bound_by)
  p['bound_by'] AS bound_by, p['name'] AS name, p['pid'] AS pid, p['tid'] AS tid,
  p['device_id'] AS device_id, p['stream_id'] AS stream_id, p['ts'] AS ts,
  p['end_ts'] AS end_ts, p['dur_ns'] AS dur_ns, p['measured_dur_ns'] AS measured_dur_ns,
  p['measured_ns'] AS measured_ns
FROM path;
