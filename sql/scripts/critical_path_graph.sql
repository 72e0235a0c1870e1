-- critical_path_graph: the graph of HTA's lightweight critical path and its heaviest path,
-- one per analyzed range (step), built as a script of tables that the critical path reports
-- include and read: each stage is computed once and read
-- as a table, since as one query of CTEs DataFusion planned every stage again for each of its
-- readers (20 s of planning for a 59-event trace).
--
-- A start and an end node for every CPU op, runtime or driver call and GPU op of the range
-- (CPU events that start in it, GPU ops whose launch call does), and edges that say what must
-- happen before what (docs/reports.md has the rules and where they differ from HTA's):
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
-- The path is the heaviest chain through these edges (engine::longest_path); an edge of -1 µs
-- or less counts 0 there, as in HTA, and with its own weight in `dur_ns`. A what-if
-- (parameter `speedup`) reweighs the matched edges and finds the path again.

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

-- _cp_stack: each event's start and end in call-stack order on its thread (HTA's
-- compare_events: at one time ends before starts, the longer of two starts first, the shorter
-- of two ends first), with the node before it, the ops open after it (`depth`) and, at a
-- start, the name of the op it opens inside (`parent_name`: the last op opened one level up)
CREATE OR REPLACE TABLE _cp_stack AS
WITH marker AS (
  SELECT {{part}} step, idx, name, pid, tid, is_lock, is_blocking, true AS is_start, ts AS t,
    ts - end_ts AS o2, idx AS o3
  FROM _cp_cpu
  UNION ALL
  SELECT {{part}} step, idx, name, pid, tid, is_lock, is_blocking, false, end_ts, end_ts - ts, -idx
  FROM _cp_cpu
)
SELECT *,
  ROW_NUMBER() OVER w AS pos,
  SUM(CASE WHEN is_start THEN 1 ELSE -1 END) OVER w AS depth,
  LAG(idx) OVER w AS prev_idx,
  LAG(is_start) OVER w AS prev_is_start,
  LAG(t) OVER w AS prev_t,
  LAG(is_lock) OVER w AS prev_is_lock,
  LAG(name) OVER w AS prev_name,
  enclosing(is_start, name) OVER w AS parent_name
FROM marker
WINDOW w AS (PARTITION BY {{part}} step, pid, tid ORDER BY t, is_start, o2, o3
  ROWS UNBOUNDED PRECEDING);

-- _cp_gpu: the GPU ops launched in each range, numbered after its CPU events, with the launch
-- call's node (`call`) and the op before it on its stream (in a replay of a CUDA graph, every
-- op of the replay)
CREATE OR REPLACE TABLE _cp_gpu AS
WITH gpu AS (
  SELECT {{part g}} s.step,
    CAST(2199023255552 + ROW_NUMBER() OVER (PARTITION BY {{part g}} s.step
      ORDER BY g.ts, g.device_id, g.stream_id, g.correlation_id) AS BIGINT) AS idx,
    g.kind, g.name, g.ts, g.end_ts, g.device_id, g.stream_id, g.correlation_id, g.api_name,
    g.api_ts, g.queue_at_call, g.queue_at_start, c.idx AS call, c.pid, c.tid
  FROM _cp_gpu_op g
  JOIN _cp_step s ON g.api_ts >= s.step_ts AND g.api_ts <= s.step_end
    AND g.api_end_ts > g.api_ts {{same_window s g}}
  JOIN (SELECT * FROM _cp_cpu WHERE correlation_id IS NOT NULL) c
    ON c.step = s.step AND c.correlation_id = g.correlation_id {{same_window c g}}
),
-- the first op of a CUDA-graph replay on its lane (beyond HTA, which keeps one op per
-- replay and no launch edge: this one waits for its cudaGraphLaunch). Grouped: as a window
-- partitioned by replay and lane, it was one small partition per op (1.7 s for 400 k ops).
replay_start AS (
  SELECT {{part}} step, MIN(idx) AS idx
  FROM gpu
  WHERE api_name = 'cudaGraphLaunch'
  GROUP BY {{part}} step, correlation_id, device_id, stream_id
),
-- the op before on its lane, read in one window per step (lane by lane) rather than one per
-- lane: DataFusion pays for every partition of a window
lane AS (
  SELECT g.*, r.idx IS NOT NULL AS replay_start,
    LAG(g.device_id) OVER w AS prev_device,
    LAG(g.stream_id) OVER w AS prev_stream,
    LAG(g.idx) OVER w AS prev_any_idx,
    LAG(g.end_ts) OVER w AS prev_any_end,
    LAG(g.name) OVER w AS prev_any_name
  FROM gpu g
  LEFT JOIN replay_start r ON r.step = g.step AND r.idx = g.idx {{same_window r g}}
  WINDOW w AS (PARTITION BY {{part g}} g.step ORDER BY g.device_id, g.stream_id, g.ts, g.idx)
)
SELECT {{part}} step, idx, kind, name, ts, end_ts, device_id, stream_id, correlation_id, api_ts,
  queue_at_call, queue_at_start, call, pid, tid, replay_start,
  CASE WHEN prev_device = device_id AND prev_stream = stream_id THEN prev_any_idx END
    AS prev_idx,
  CASE WHEN prev_device = device_id AND prev_stream = stream_id THEN prev_any_end END
    AS prev_end,
  CASE WHEN prev_device = device_id AND prev_stream = stream_id THEN prev_any_name END
    AS prev_name
FROM lane;

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
      FROM _cp_gpu_op WHERE queue_at_call IS NOT NULL
      UNION ALL
      SELECT {{part}} record_device, record_stream, record_ts, 1, NULL, step, call
      FROM sync WHERE sync_type IN (1, 2)))
  WHERE call IS NOT NULL
),
record_source AS (
  SELECT {{part y}} y.step, y.call, y.call_ts, y.call_end, y.sync_type, y.stream_id, y.pid,
    y.tid, g.idx AS source, g.end_ts AS source_end, g.name AS source_name
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
        CAST(NULL AS BIGINT) AS source, CAST(NULL AS BIGINT) AS source_end,
        CAST(NULL AS VARCHAR) AS source_name
      FROM _cp_gpu WHERE queue_at_call IS NOT NULL
      UNION ALL
      SELECT {{part}} step, stream_id, pid, tid, call_ts, 0, NULL, source, source_end, source_name
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
      last_seen(op_end) OVER lane AS source_end,
      last_seen(op_name) OVER lane AS source_name
    FROM (
      SELECT {{part}} step, device_id, stream_id, ts AS t, 1 AS o, idx AS op, end_ts AS op_end,
        name AS op_name, CAST(NULL AS BIGINT) AS call
      FROM _cp_gpu
      UNION ALL
      SELECT {{part}} step, device_id, stream_id, call_end, 0, NULL, NULL, NULL, call FROM sync_lane)
    WINDOW lane AS (PARTITION BY {{part}} step, device_id, stream_id ORDER BY t, o, op
      ROWS UNBOUNDED PRECEDING))
  WHERE call IS NOT NULL AND source IS NOT NULL
),
-- in a window without cuda_sync records (parameter infer_syncs; beyond HTA, which then has no
-- waits), a cudaStreamSynchronize, cudaEventSynchronize or cudaDeviceSynchronize waited for
-- the GPU op of its process that ended last while it ran, if one did: the calls do not say
-- which stream or event they waited on (one pass over each process's op ends and calls)
inferred AS (
  SELECT * FROM (
    SELECT *,
      last_seen(op) OVER ends AS source,
      last_seen(op_end) OVER ends AS source_end,
      last_seen(op_name) OVER ends AS source_name
    FROM (
      SELECT {{part}} step, pid, end_ts AS t, 0 AS o, idx AS op, end_ts AS op_end,
        name AS op_name, CAST(NULL AS BIGINT) AS call, CAST(NULL AS BIGINT) AS call_ts
      FROM _cp_gpu
      UNION ALL
      SELECT {{part c}} c.step, c.pid, c.end_ts, 1, NULL, NULL, NULL, c.idx, c.ts
      FROM _cp_cpu c
      LEFT JOIN (SELECT DISTINCT {{part}} true AS recorded FROM cuda_sync) y ON true
        {{same_window y c}}
      WHERE {{param infer_syncs}} <> 0 AND y.recorded IS NULL
        AND c.name IN ('cudaStreamSynchronize', 'cudaEventSynchronize', 'cudaDeviceSynchronize'))
    WINDOW ends AS (PARTITION BY {{part}} step, pid ORDER BY t, o, op ROWS UNBOUNDED PRECEDING))
  WHERE call IS NOT NULL AND source_end >= call_ts
)
SELECT {{part}} step, 'op' AS kind, source, source_end, source_name, target
FROM stream_wait
UNION ALL
SELECT {{part}} step, 'call', source, source_end, source_name, call FROM inferred
UNION ALL
SELECT {{part}} step, 'call', source, source_end, source_name, call FROM stream_last
UNION ALL
SELECT {{part}} step, 'call', source, source_end, source_name, call FROM record_source
WHERE sync_type = 1;

-- _cp_edge: every edge of each range's graph; `edge_id` orders them as HTA adds them (lock,
-- call stacks thread by thread, GPU ops), which decides between paths of equal weight (an
-- op that several calls waited for has an edge to each: ordered by their node, so that
-- every run numbers them alike)
CREATE OR REPLACE TABLE _cp_edge AS
WITH
-- consecutive nodes of a thread's call stack; two runtime-lock calls meet only end to start
-- (the lock edges join the rest). Every `seq` is a BIGINT: ROW_NUMBER's unsigned numbers
-- mixed with signed ones made the union's `seq` a DECIMAL.
stack_edge AS (
  SELECT {{part k}} k.step, 2 AS pass, CAST(k.pos AS BIGINT) AS seq, k.pid, k.tid,
    k.prev_idx * 2 + CASE WHEN k.prev_is_start THEN 0 ELSE 1 END AS src,
    k.idx * 2 + CASE WHEN k.is_start THEN 0 ELSE 1 END AS dst,
    k.prev_t AS ts, k.t AS end_ts,
    CASE WHEN k.is_start AND k.depth = 1 THEN 'dependency' ELSE 'operator' END AS type,
    CASE WHEN k.is_start AND k.depth = 1 THEN 0
         WHEN NOT k.is_start AND k.is_blocking THEN 0
         ELSE k.t - k.prev_t END AS weight,
    -- the op the time belongs to: the earlier op from its start, the later one up to its end,
    -- their parent in between
    CASE WHEN k.is_start AND k.depth = 1 THEN NULL
         WHEN k.prev_is_start THEN k.prev_name
         WHEN NOT k.is_start THEN k.name
         ELSE k.parent_name END AS name,
    CAST(NULL AS BIGINT) AS device_id, CAST(NULL AS BIGINT) AS stream_id
  FROM _cp_stack k
  WHERE k.prev_idx IS NOT NULL
    AND NOT (k.is_lock AND k.prev_is_lock AND (k.prev_is_start OR NOT k.is_start))
),
-- the runtime lock, over every thread in node order: an end takes every lock call started
-- since the previous end (its own start: the call's time), and follows that end directly
lock_marker AS (
  SELECT {{part}} step, idx, name, pid, tid, is_start, t,
    SUM(CASE WHEN is_start THEN 0 ELSE 1 END) OVER lw AS ends,
    LAG(idx) OVER lw AS prev_idx,
    LAG(is_start) OVER lw AS prev_is_start,
    LAG(t) OVER lw AS prev_t,
    CAST(ROW_NUMBER() OVER lw AS BIGINT) AS seq
  FROM _cp_stack
  WHERE is_lock
  WINDOW lw AS (PARTITION BY {{part}} step ORDER BY t, idx, is_start DESC ROWS UNBOUNDED PRECEDING)
),
lock_edge AS (
  SELECT {{part s}} s.step, 1 AS pass, e.seq * 1000000 + s.seq AS seq, e.pid, e.tid,
    s.idx * 2 AS src, e.idx * 2 + 1 AS dst, s.t AS ts, e.t AS end_ts,
    CASE WHEN s.idx = e.idx THEN 'operator' ELSE 'dependency' END AS type,
    CASE WHEN s.idx = e.idx THEN e.t - s.t ELSE 0 END AS weight,
    CASE WHEN s.idx = e.idx THEN e.name END AS name,
    CAST(NULL AS BIGINT) AS device_id, CAST(NULL AS BIGINT) AS stream_id
  FROM lock_marker s
  JOIN lock_marker e ON e.step = s.step AND NOT e.is_start AND e.ends = s.ends + 1 {{same_window e s}}
  WHERE s.is_start
  UNION ALL
  SELECT {{part}} step, 1, seq * 1000000, pid, tid, prev_idx * 2 + 1, idx * 2 + 1, prev_t, t,
    'dependency', 0, NULL, NULL, NULL
  FROM lock_marker
  WHERE NOT is_start AND NOT prev_is_start
),
-- what an op's start waited for: its launch, when the stream's queue was empty and the
-- previous op and any awaited event were done before the call; else the previous op
gpu_start AS (
  SELECT {{part g}} g.step, g.idx, g.pid, g.tid, g.call, g.prev_idx, g.prev_end, g.prev_name,
    g.api_ts, g.ts, g.name, g.device_id, g.stream_id,
    (g.queue_at_call = 1 AND g.queue_at_start = 0 OR g.replay_start)
      AND (g.prev_end IS NULL OR g.prev_end < g.api_ts)
      AND (w.source IS NULL OR w.source_end < g.api_ts) AS launch,
    w.source IS NULL OR w.source_end < g.prev_end AS unsynced
  FROM _cp_gpu g
  LEFT JOIN _cp_wait w ON w.step = g.step AND w.kind = 'op' AND w.target = g.idx {{same_window w g}}
),
gpu_edge AS (
  -- the op's own time
  SELECT {{part}} step, 3 AS pass, idx * 4 AS seq, pid, tid, idx * 2 AS src, idx * 2 + 1 AS dst,
    ts, end_ts, 'operator' AS type, end_ts - ts AS weight, name, device_id, stream_id
  FROM _cp_gpu
  UNION ALL
  -- a stream waiting on another stream's event
  SELECT {{part g}} g.step, 3, g.idx * 4 + 1, g.pid, g.tid, w.source * 2 + 1, g.idx * 2,
    w.source_end, g.ts, 'sync', 0, w.source_name, g.device_id, g.stream_id
  FROM _cp_gpu g
  JOIN _cp_wait w ON w.step = g.step AND w.kind = 'op' AND w.target = g.idx {{same_window w g}}
  UNION ALL
  -- launch delay, or else the gap after the stream's previous op
  SELECT {{part}} step, 3 AS pass, idx * 4 + 2 AS seq, pid, tid,
    CASE WHEN launch THEN call * 2 ELSE prev_idx * 2 + 1 END AS src, idx * 2 AS dst,
    CASE WHEN launch THEN api_ts ELSE prev_end END AS ts, ts AS end_ts,
    CASE WHEN launch THEN 'launch' ELSE 'kernel_kernel' END AS type,
    CASE WHEN launch THEN ts - api_ts ELSE ts - prev_end END AS weight,
    CASE WHEN launch THEN name ELSE prev_name END AS name, device_id, stream_id
  FROM gpu_start
  WHERE launch OR (prev_idx IS NOT NULL AND ts - prev_end < 1500000 AND unsynced)
  UNION ALL
  -- the synchronizing call ends after what it waited for
  SELECT {{part w}} w.step, 4, w.source * 4 + 3, c.pid, c.tid, w.source * 2 + 1, c.idx * 2 + 1,
    w.source_end, c.end_ts, 'sync', 0, w.source_name, NULL, NULL
  FROM _cp_wait w
  JOIN _cp_cpu c ON c.step = w.step AND c.idx = w.target {{same_window c w}}
  WHERE w.kind = 'call'
)
SELECT *,
  CAST(ROW_NUMBER() OVER (PARTITION BY {{part}} step ORDER BY pass,
    CASE WHEN pass = 2 THEN pid END, CASE WHEN pass = 2 THEN tid END, seq, dst) AS BIGINT) AS edge_id,
  -- what the time was spent on (HTA's bound_by, its communication kernels matched by name)
  CASE
    WHEN type = 'launch' THEN 'launch_overhead'
    WHEN type = 'kernel_kernel' THEN 'kernel_kernel_overhead'
    WHEN type <> 'operator' THEN NULL
    WHEN device_id IS NULL THEN 'cpu'
    WHEN name LIKE 'nccl%' OR name LIKE '%ncclKernel%' OR name LIKE 'hccl%'
      OR name LIKE 'hip%' THEN 'gpu_communication'
    ELSE 'gpu_compute' END AS bound_by
FROM (
  SELECT {{part}} step, pass, seq, pid, tid, src, dst, ts, end_ts, type, weight, name,
    device_id, stream_id FROM lock_edge
  UNION ALL
  SELECT {{part}} step, pass, seq, pid, tid, src, dst, ts, end_ts, type, weight, name,
    device_id, stream_id FROM stack_edge
  UNION ALL
  SELECT {{part}} step, pass, seq, pid, tid, src, dst, ts, end_ts, type, weight, name,
    device_id, stream_id FROM gpu_edge);

-- _cp_speedup: the what-if's rules (parameter `speedup`: `PATTERN=FACTOR`, `;` between
-- rules): an edge whose bound_by is PATTERN, or whose op's name is LIKE it, weighs FACTOR
-- times its own time (the smallest factor of the rules it matches)
CREATE OR REPLACE TABLE _cp_speedup AS
SELECT trim(split_part(rule, '=', 1)) AS pattern,
  CAST(trim(split_part(rule, '=', 2)) AS DOUBLE) AS factor
FROM (SELECT unnest(string_to_array({{param speedup}}, ';')) AS rule)
WHERE trim(rule) <> '';

-- _cp_sped_up: the edges the what-if shortens, with their new weight
CREATE OR REPLACE TABLE _cp_sped_up AS
SELECT {{part e}} e.step, e.edge_id,
  CAST(round(e.weight * MIN(r.factor)) AS BIGINT) AS weight
FROM _cp_edge e
JOIN _cp_speedup r ON e.bound_by = r.pattern OR e.name LIKE r.pattern
WHERE e.weight > 0
GROUP BY {{part e}} e.step, e.edge_id, e.weight;

-- _cp_path: the path's edges of each range, in order (`position` from 0), under the what-if's
-- weights; `measured_ns`, the length of the path under the measured weights (computed only
-- for a what-if). The path is found over numbers only: with the edges' names in the aggregated
-- structs, array_agg held a copy of every batch's text per edge (7.9 GB for HTA's 19 k-edge
-- CUDA-graph step).
CREATE OR REPLACE TABLE _cp_path AS
WITH weighted AS (
  SELECT {{part e}} e.step, e.edge_id, e.src, e.dst, e.weight AS measured,
    COALESCE(w.weight, e.weight) AS weight
  FROM _cp_edge e
  LEFT JOIN _cp_sped_up w ON w.step = e.step AND w.edge_id = e.edge_id {{same_window w e}}
),
path AS (
  SELECT {{part}} step,
    longest_path(array_agg(named_struct('edge_id', edge_id, 'src', src, 'dst', dst,
      'weight', CASE WHEN weight <= -1000 THEN 0 ELSE weight END))) AS edges,
    longest_path(array_agg(named_struct('edge_id', edge_id, 'src', src, 'dst', dst,
      'weight', CASE WHEN measured <= -1000 THEN 0 ELSE measured END))
      FILTER (WHERE {{param speedup}} <> '')) AS measured_edges
  FROM weighted
  GROUP BY {{part}} step
),
measured AS (
  SELECT {{part p}} p.step, SUM(e.weight) AS measured_ns
  FROM (SELECT {{part}} step, unnest(measured_edges)['edge_id'] AS edge_id FROM path) p
  JOIN _cp_edge e ON e.step = p.step AND e.edge_id = p.edge_id {{same_window e p}}
  WHERE e.bound_by IS NOT NULL
  GROUP BY {{part p}} p.step
),
segment AS (
  SELECT {{part}} step, unnest(edges)['edge_id'] AS edge_id,
    unnest(range(array_length(edges))) AS position
  FROM path
)
SELECT {{part e}} e.step, s.position, e.type, e.bound_by, e.name, e.pid, e.tid, e.device_id,
  e.stream_id, e.ts, e.end_ts, COALESCE(w.weight, e.weight) AS dur_ns,
  e.weight AS measured_dur_ns, m.measured_ns
FROM segment s
JOIN _cp_edge e ON e.step = s.step AND e.edge_id = s.edge_id {{same_window e s}}
LEFT JOIN _cp_sped_up w ON w.step = s.step AND w.edge_id = s.edge_id {{same_window w s}}
LEFT JOIN measured m ON m.step = s.step {{same_window m s}};
