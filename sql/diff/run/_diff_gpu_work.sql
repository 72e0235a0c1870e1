-- _diff_gpu_work: each run's kernels, copies and sets, each in the step whose span holds the
-- start of the call that launched it, as HTA's iterations hold them. An op whose call is not
-- in the trace (launched before it began) is left out, as is work outside every step; in a
-- window where no op has a call (ROCm traces without correlation), each op is in the step
-- its own start falls in. Each op has the CPU op that issued the call, the innermost
-- annotated range around the call, its normalized kernel name (`diff_kernel_name`) and its
-- place among the step's launches of that kind and name by that CPU op (`nth`): the k-th
-- such launch of BASE pairs with the k-th of NEW.
CREATE OR REPLACE VIEW _diff_gpu_work AS
WITH uncovered AS (
  -- the calls whose external id names no CPU op (older Kineto traces give each call an
  -- external id of its own): only these need their thread's ops (at 1 M events, numbering
  -- every thread's ops took 0.3 s)
  SELECT {{part a}} CAST(a.process_id AS VARCHAR) AS pid, CAST(a.thread_id AS VARCHAR) AS tid,
    a.ts, a.correlation_id
  FROM api_call a
  LEFT ANTI JOIN _diff_call_op i
    ON i.correlation_id = a.correlation_id AND i.cpu_op IS NOT NULL {{same_window i a}}
  WHERE a.correlation_id <> 0
),
uncovered_thread AS (
  -- their threads, each once (a semi join on the calls themselves compares each op with
  -- every call of its thread: 24 s on HTA's trace-diff pair)
  SELECT DISTINCT {{part}} pid, tid FROM uncovered
),
thread_cpu_op AS (
  -- the CPU ops of those threads
  SELECT {{part e}} e.ts_ns AS ts, e.name, e.ts_ns + e.dur_ns AS op_end, e.pid, e.tid
  FROM cpu_event e
  JOIN uncovered_thread t ON t.pid = e.pid AND t.tid = e.tid {{same_window t e}}
  WHERE e.ph = 'X' AND e.cat = 'cpu_op'
),
thread_op AS (
  -- each thread's CPU ops numbered in start order; of two that start together, the longer
  -- first (the shorter one runs inside it), name last, so that the order is total but for
  -- ops that are alike
  SELECT {{part}} ts, name, op_end, pid, tid,
    ROW_NUMBER() OVER (
      PARTITION BY {{part}} pid, tid ORDER BY ts, op_end DESC, name) AS op_no
  FROM thread_cpu_op
),
thread_call AS (
  -- each call numbered by the CPU ops its thread started up to it
  SELECT {{part}} is_call, ts, pid, tid, correlation_id,
    SUM(1 - is_call) OVER (
      PARTITION BY {{part}} pid, tid ORDER BY ts, is_call ROWS UNBOUNDED PRECEDING) AS op_no
  FROM (
    SELECT {{part}} 0 AS is_call, ts, pid, tid, CAST(NULL AS BIGINT) AS correlation_id
    FROM thread_cpu_op
    UNION ALL
    SELECT {{part}} 1, ts, pid, tid, correlation_id
    FROM uncovered
  ) e
),
by_thread AS (
  -- the CPU op that started last on the call's thread before it (the op of its number),
  -- while it still runs (as HTA's call stacks)
  SELECT {{part c}} c.correlation_id, o.name AS cpu_op
  FROM thread_call c
  JOIN thread_op o
    ON o.pid = c.pid AND o.tid = c.tid AND o.op_no = c.op_no {{same_window o c}}
  WHERE c.is_call = 1 AND o.op_end >= c.ts
),
issuer AS (
  -- by external id where the call has one (_diff_call_op), else by thread
  SELECT {{coalesce_part t i}} COALESCE(t.correlation_id, i.correlation_id) AS correlation_id,
    COALESCE(i.cpu_op, t.cpu_op) AS cpu_op
  FROM by_thread t
  FULL JOIN _diff_call_op i ON i.correlation_id = t.correlation_id {{same_window i t}}
),
annotation AS (
  -- the innermost annotated range open on the call's thread when it started (the latest to
  -- start; of two that start together, the shorter), steps aside
  SELECT {{part}} correlation_id, arg_max(name, ts, -end_ts) AS annotation
  FROM annotation_call
  WHERE name NOT LIKE {{param step_name}}
  GROUP BY {{part}} correlation_id
),
op AS (
  SELECT
    {{part g}} g.kind, g.name, g.ts, g.dur, g.device_id, g.stream_id, a.ts AS api_ts, i.cpu_op,
    n.annotation,
    -- normalized once here: the pairing order below sorts by it (0.3-0.5 s at 1 M events)
    diff_kernel_name(g.name) AS kernel,
    -- the call's CPU time, counted on the first op it launched only (a graph launch has many)
    CASE WHEN (LAG(g.correlation_id) OVER by_call IS DISTINCT FROM g.correlation_id)
        OR (LAG(a.ts) OVER by_call IS DISTINCT FROM a.ts)
      THEN a.dur ELSE 0 END AS call_dur,
    -- the stream's previous op's end
    LAG(g.ts + g.dur) OVER (
      PARTITION BY {{part g}} g.device_id, g.stream_id ORDER BY g.ts, g.dur) AS prev_end,
    -- whether the run's window links GPU ops to their calls at all (over the partition that
    -- by_call sorts already: a join of every op with the calls again took 0.1 s at 1 M events)
    COUNT(a.correlation_id) OVER ({{partition_by_part g}}) > 0 AS any_call
  FROM gpu_op g
  LEFT JOIN api_call a
    ON a.correlation_id = g.correlation_id AND g.correlation_id <> 0 {{same_window a g}}
  LEFT JOIN issuer i
    ON i.correlation_id = g.correlation_id AND g.correlation_id <> 0 {{same_window i g}}
  LEFT JOIN annotation n
    ON n.correlation_id = g.correlation_id AND g.correlation_id <> 0 {{same_window n g}}
  WHERE g.kind IN ('kernel', 'gpu_memcpy', 'gpu_memset')
  WINDOW by_call AS ({{partition_by_part g}} ORDER BY g.correlation_id, a.ts, g.ts, g.dur)
)
SELECT
  {{pair o}}
  s.step,
  -- kernel, gpu_memcpy or gpu_memset; the name as recorded and normalized
  o.kind,
  o.name,
  o.kernel,
  COALESCE(o.cpu_op, '(no CPU op)') AS cpu_op,
  COALESCE(o.annotation, '(no annotation)') AS annotation,
  -- ROW_NUMBER() OVER (PARTITION BY .. s.step, o.kind, o.cpu_op, o.kernel ORDER BY ..),
  -- without sorting by the names (src/engine/row_number_among.rs)
  row_number_among(o.kind, o.cpu_op, o.kernel) OVER (
    PARTITION BY {{pair o}} s.step ORDER BY COALESCE(o.api_ts, o.ts), o.ts) AS nth,
  o.device_id,
  o.stream_id,
  -- start (unix ns), duration (ns)
  o.ts,
  o.dur,
  -- CPU time of the launching call (ns; 0 when none, or counted on an earlier op)
  COALESCE(o.call_dur, 0) AS call_dur,
  -- idle time of the stream right before the op that was spent waiting for the host: the
  -- gap after the previous op when the launching call started after that op had ended
  -- (HTA's host wait), else 0
  CASE WHEN o.api_ts > o.prev_end AND o.ts > o.prev_end THEN o.ts - o.prev_end ELSE 0 END
    AS host_wait
FROM op o
JOIN _diff_step s
  ON COALESCE(o.api_ts, o.ts) >= s.step_ts AND COALESCE(o.api_ts, o.ts) < s.step_end
  {{same_pair s o}}
WHERE o.api_ts IS NOT NULL OR NOT o.any_call
