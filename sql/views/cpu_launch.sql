-- cpu_launch: which CPU operator (Kineto cpu_op or user_annotation X event) issued which
-- CUDA API call. CUPTI records the innermost pushed external id per call
-- (external_correlation); Kineto writes the same id as args["External id"].
CREATE OR REPLACE VIEW cpu_launch AS
SELECT
  {{part a}}
  -- the external id shared by the CPU op and the API call
  x.external_id,
  -- the CPU op: category, name, pid/tid (text, as Kineto writes them), start (unix ns), duration (ns)
  e.cat AS cpu_cat,
  e.name AS cpu_name,
  e.pid AS cpu_pid,
  e.tid AS cpu_tid,
  e.ts_ns AS cpu_ts,
  e.dur_ns AS cpu_dur,
  -- the API call (see api_call)
  a.correlation_id,
  a.domain AS api_domain,
  a.name AS api_name,
  a.ts AS api_ts,
  a.dur AS api_dur,
  a.process_id,
  a.thread_id
FROM cpu_event e
JOIN external_correlation x ON x.external_id = e.external_id {{same_window x e}}
JOIN api_call a ON a.correlation_id = x.correlation_id {{same_window a x}}
WHERE e.ph = 'X'
  AND e.cat IN ('cpu_op', 'user_annotation')
  AND x.correlation_id <> 0
