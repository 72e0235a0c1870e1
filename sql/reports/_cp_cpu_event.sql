-- _cp_cpu_event: the CPU side of the critical path's graph: every CPU op (Kineto cpu_op) and
-- every CUDA runtime or driver call, each on its thread as the CPU trace names it, as HTA's
-- critical path takes them (events of no duration left out: they break its call stacks).
-- `idx` numbers the events of a window, CPU ops (their place in the CPU trace) before API
-- calls; it breaks ties of time as HTA's event index does.
CREATE OR REPLACE VIEW _cp_cpu_event AS
WITH os_thread AS (
  SELECT {{part}} process_id, thread_id, MAX(resource_id) AS tid
  FROM thread_resource
  GROUP BY {{part}} process_id, thread_id
)
SELECT
  {{part}}
  -- see above; unique in a window
  event_index AS idx,
  -- 'cpu_op', or 'runtime' / 'driver' for an API call
  cat,
  name,
  -- the thread: OS process and thread id
  TRY_CAST(pid AS BIGINT) AS pid,
  TRY_CAST(tid AS BIGINT) AS tid,
  -- start and end, unix ns
  ts_ns AS ts,
  ts_ns + dur_ns AS end_ts,
  -- the API call's correlation id (NULL for a CPU op)
  CAST(NULL AS BIGINT) AS correlation_id
FROM cpu_event
WHERE ph = 'X' AND cat = 'cpu_op' AND dur_ns > 0
UNION ALL
SELECT
  {{part a}}
  CAST(1099511627776 + ROW_NUMBER() OVER ({{partition_by_part a}} ORDER BY a.ts, a.correlation_id, a.dur)
    AS BIGINT),
  a.domain,
  a.name,
  a.process_id,
  COALESCE(t.tid, a.thread_id_i32),
  a.ts,
  a.ts + a.dur,
  a.correlation_id
FROM api_call a
LEFT JOIN os_thread t ON t.process_id = a.process_id AND t.thread_id = a.thread_id_i32 {{same_window t a}}
WHERE a.dur > 0
