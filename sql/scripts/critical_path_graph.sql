-- critical_path_graph: the graph of HTA's lightweight critical path and its heaviest path,
-- one per analyzed range (step), built as a script of tables that the critical path reports
-- include and read: each stage is computed once and read
-- as a table, since as one query of CTEs DataFusion planned every stage again for each of its
-- readers (20 s of planning for a 59-event trace).
--
-- A start and an end node for every CPU op, runtime or driver call and GPU op of the range
-- (CPU events that start in it, GPU ops whose launch call does), and edges that say what must
-- happen before what. SQL gathers the nodes and the waits; engine::critical_path makes the
-- edges and finds the path, a step at a time (docs/reports.md has the rules and where they
-- differ from HTA's):
-- - on a thread, the ops in call-stack order (weight: the time between the two nodes; 0 from a
--   top-level op to the next, and 0 up to the end of a blocking call, whose wait the GPU side
--   carries);
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

-- _cp_cpu: the CPU events of each range
CREATE OR REPLACE TABLE _cp_cpu AS
SELECT {{part e}} s.step, e.idx, e.cat, e.name, e.pid, e.tid, e.ts, e.end_ts, e.correlation_id,
  e.name IN ('cudaHostAlloc', 'cudaLaunchKernel', 'cudaMemcpyAsync') AS is_lock,
  e.name IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize', 'cudaEventQuery',
    'cudaEventSynchronize', 'cudaMemcpy', 'cudaMemcpyAsync') AS is_blocking
FROM _cp_cpu_event e
-- a join by containment: the engine's interval join (as a range join, DataFusion compared
-- every event with every range: 2.3 s for 1 M events and 5 k steps)
JOIN _cp_step s ON e.ts >= s.step_ts AND e.ts <= s.step_end {{same_window s e}};

-- _cp_launch: every GPU op with its launch call and queue lengths (_cp_gpu_op), held: the GPU
-- ops and the waits read it, and the view reads the window's launches several times over
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

-- _cp_wait: what each synchronization of a range waited for (`source`, a GPU op of the range)
-- and what waited (`target`): the end of the synchronizing call (kind 'call'), or the first op
-- launched after a cudaStreamWaitEvent by its thread onto the waiting stream ('op')
CREATE OR REPLACE TABLE _cp_wait AS
WITH sync AS (
  SELECT {{part y}} c.step, y.sync_type, y.stream_id, c.idx AS call, c.ts AS call_ts,
    c.end_ts AS call_end, c.pid, c.tid, e.device_id AS record_device,
    e.stream_id AS record_stream, r.ts AS record_ts
  FROM cuda_sync y
  JOIN _cp_cpu c ON c.correlation_id = y.correlation_id {{same_window c y}}
  LEFT JOIN cuda_event e ON y.cuda_event_sync_id <> 0
    AND e.cuda_event_sync_id = y.cuda_event_sync_id {{same_window e y}}
  LEFT JOIN api_call r ON r.correlation_id = e.correlation_id {{same_window r e}}
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
  SELECT {{part y}} y.step, y.call, y.call_ts, y.call_end, y.sync_type, y.stream_id, y.pid,
    y.tid, g.idx AS source, g.end_ts AS source_end
  FROM sync y
  JOIN record_last r ON r.step = y.step AND r.call = y.call {{same_window r y}}
  JOIN _cp_gpu g ON g.step = y.step AND g.correlation_id = r.source_correlation {{same_window g y}}
),
-- a stream wait's target: the first op its thread launched onto the waiting stream after it
-- (one pass backwards over the thread's launches and waits on that stream)
stream_wait AS (
  SELECT * FROM (
    SELECT *, last_seen(launched) OVER (PARTITION BY {{part}} step, stream_id, pid, tid
      ORDER BY t DESC, o, launched DESC ROWS UNBOUNDED PRECEDING) AS target
    FROM (
      SELECT {{part}} step, stream_id, pid, tid, api_ts AS t, 1 AS o, idx AS launched,
        CAST(NULL AS BIGINT) AS source, CAST(NULL AS BIGINT) AS source_end
      FROM _cp_gpu WHERE queue_at_call IS NOT NULL
      UNION ALL
      SELECT {{part}} step, stream_id, pid, tid, call_ts, 0, NULL, source, source_end
      FROM record_source WHERE sync_type = 2))
  WHERE source IS NOT NULL AND target IS NOT NULL
),
-- the last op of each stream (of the synced one, for a stream sync) that started before the
-- synchronizing call ended, in one pass over each stream's ops and syncs
sync_lane AS (
  SELECT {{part y}} y.step, y.call, y.call_end, l.device_id, l.stream_id
  FROM sync y
  JOIN (SELECT DISTINCT {{part}} step, device_id, stream_id FROM _cp_gpu) l
    ON l.step = y.step AND (y.sync_type = 4 OR l.stream_id = y.stream_id) {{same_window l y}}
  WHERE y.sync_type IN (3, 4)
),
stream_last AS (
  SELECT * FROM (
    SELECT *,
      last_seen(op) OVER lane AS source,
      last_seen(op_end) OVER lane AS source_end
    FROM (
      SELECT {{part}} step, device_id, stream_id, ts AS t, 1 AS o, idx AS op, end_ts AS op_end,
        CAST(NULL AS BIGINT) AS call
      FROM _cp_gpu
      UNION ALL
      SELECT {{part}} step, device_id, stream_id, call_end, 0, NULL, NULL, call FROM sync_lane)
    WINDOW lane AS (PARTITION BY {{part}} step, device_id, stream_id ORDER BY t, o, op
      ROWS UNBOUNDED PRECEDING))
  WHERE call IS NOT NULL AND source IS NOT NULL
),
-- in a window without cuda_sync records (parameter infer_syncs; beyond HTA, which then has no
-- waits), a cudaStreamSynchronize, cudaEventSynchronize or cudaDeviceSynchronize waited for
-- the GPU op of its process that ended last while it ran, if one did: the calls do not say
-- which stream or event they waited on (one pass over each process's op ends and calls; only
-- the processes with such calls, so a window with cuda_sync records sorts nothing here)
inferred_call AS (
  SELECT {{part c}} c.step, c.pid, c.idx, c.ts, c.end_ts
  FROM _cp_cpu c
  LEFT JOIN (SELECT DISTINCT {{part}} true AS recorded FROM cuda_sync) y ON true
    {{same_window y c}}
  WHERE {{param infer_syncs}} <> 0 AND y.recorded IS NULL
    AND c.name IN ('cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaDeviceSynchronize')
),
inferred AS (
  SELECT * FROM (
    SELECT *,
      last_seen(op) OVER ends AS source,
      last_seen(op_end) OVER ends AS source_end
    FROM (
      SELECT {{part g}} g.step, g.pid, g.end_ts AS t, 0 AS o, g.idx AS op, g.end_ts AS op_end,
        CAST(NULL AS BIGINT) AS call, CAST(NULL AS BIGINT) AS call_ts
      FROM _cp_gpu g
      JOIN (SELECT DISTINCT {{part}} step, pid FROM inferred_call) k
        ON k.step = g.step AND (k.pid IS NOT DISTINCT FROM g.pid) {{same_window k g}}
      UNION ALL
      SELECT {{part}} step, pid, end_ts, 1, NULL, NULL, idx, ts FROM inferred_call)
    WINDOW ends AS (PARTITION BY {{part}} step, pid ORDER BY t, o, op ROWS UNBOUNDED PRECEDING))
  WHERE call IS NOT NULL AND source_end >= call_ts
)
SELECT {{part}} step, 'op' AS kind, source, source_end, target
FROM stream_wait
UNION ALL
SELECT {{part}} step, 'call', source, source_end, call FROM inferred
UNION ALL
SELECT {{part}} step, 'call', source, source_end, call FROM stream_last
UNION ALL
SELECT {{part}} step, 'call', source, source_end, call FROM record_source
WHERE sync_type = 1;

-- _cp_path: the path of each range, segment by segment (`position` from 0), found by
-- engine::critical_path from the range's nodes (a list each of its CPU events, GPU ops and
-- waits; the graph's rules are in the header above and in that module) under the what-if's
-- weights (parameter `speedup`); `measured_ns`, the length of the path as measured (for a
-- what-if only). The edges stay inside the function: as a table they were unnested, held,
-- aggregated again for the path and joined back to it. Three narrow lists, not one of all
-- three kinds: array_agg copies each list twice, and one list of all carried 23 fields a node.
CREATE OR REPLACE TABLE _cp_path AS
WITH events AS (
  SELECT {{part}} step, array_agg(named_struct('idx', idx, 'name', name, 'pid', pid,
    'tid', tid, 'ts', ts, 'end_ts', end_ts, 'is_lock', is_lock,
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
waits AS (
  SELECT {{part}} step, array_agg(named_struct('is_op', kind = 'op', 'source', source,
    'source_end', source_end, 'target', target)) AS waits
  FROM _cp_wait
  GROUP BY {{part}} step
),
path AS (
  -- a range's ops and waits hang on its CPU events' calls; not every range has them
  SELECT {{part e}} e.step, unnest(critical_path(e.events, o.ops, w.waits, {{param speedup}})) AS p
  FROM events e
  LEFT JOIN ops o ON o.step = e.step {{same_window o e}}
  LEFT JOIN waits w ON w.step = e.step {{same_window w e}}
)
SELECT {{part}} step, p['position'] AS position, p['type'] AS type,
  -- what the time was spent on (HTA's bound_by)
  p['bound_by'] AS bound_by, p['name'] AS name, p['pid'] AS pid, p['tid'] AS tid,
  p['device_id'] AS device_id, p['stream_id'] AS stream_id, p['ts'] AS ts,
  p['end_ts'] AS end_ts, p['dur_ns'] AS dur_ns, p['measured_dur_ns'] AS measured_dur_ns,
  p['measured_ns'] AS measured_ns
FROM path;
