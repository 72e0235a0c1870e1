-- @report annotation_gpu_time: per annotated CPU range name: its CPU time and the GPU work it launched
-- Follows Nsight Systems' `nsys stats --report nvtx_gpu_proj_sum`: a range (a Kineto
-- user_annotation / record_function, or an NVTX range of an imported nsys report) owns the
-- API calls its thread made while it was open, nested ranges included, and so the GPU ops
-- those calls launched. The range's projection onto the GPU runs from its first op's start to
-- its last op's end. Only ranges that launched GPU work are counted.
-- Ranges meet calls through equi-joins on buckets of time: a range shorter than a tier's
-- bucket width (1 ms, 10 ms, ..., 100 s; each range in the narrowest tier it fits) covers at
-- most two of that tier's buckets, so a call inside it lies in its first or its last bucket.
-- Only ranges of 100 s or more are compared with every call of their thread. (Comparing every
-- range longer than 1 ms with every call of its thread took minutes on a 10 M-event window.)
WITH tier AS (
  SELECT column1 AS width
  FROM (VALUES (1000000), (10000000), (100000000), (1000000000), (10000000000), (100000000000))
),
annotated AS (
  SELECT {{part}} event_index, name, TRY_CAST(pid AS BIGINT) AS pid, TRY_CAST(tid AS BIGINT) AS tid,
    ts_ns AS ts, ts_ns + dur_ns AS end_ts
  FROM cpu_event
  WHERE ph = 'X' AND cat = 'user_annotation' AND dur_ns >= 0
),
tiered AS (
  SELECT r.*, t.width, r.ts / t.width AS first_bucket, r.end_ts / t.width AS last_bucket
  FROM annotated r
  JOIN tier t ON r.end_ts - r.ts < t.width AND (r.end_ts - r.ts >= t.width / 10 OR t.width = 1000000)
),
os_thread AS (
  SELECT {{part}} process_id, thread_id, MAX(resource_id) AS tid
  FROM thread_resource
  GROUP BY {{part}} process_id, thread_id
),
call AS (
  -- the calling thread as the CPU trace names it: CUPTI's thread id through thread_resource
  -- where the window has one, else its low 32 bits (an imported trace's OS thread id)
  SELECT {{part a}} a.process_id, COALESCE(t.tid, a.thread_id_i32) AS tid, a.ts, a.correlation_id
  FROM api_call a
  LEFT JOIN os_thread t ON t.process_id = a.process_id AND t.thread_id = a.thread_id_i32 {{same_window t a}}
  WHERE a.correlation_id <> 0
),
tiered_call AS (
  SELECT c.*, t.width, c.ts / t.width AS bucket FROM call c CROSS JOIN tier t
),
inside AS (
  SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id
  FROM tiered r
  JOIN tiered_call c ON c.process_id = r.pid AND c.tid = r.tid AND c.width = r.width
    AND c.bucket = r.first_bucket {{same_window c r}}
  WHERE c.ts >= r.ts AND c.ts <= r.end_ts
  UNION ALL
  SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id
  FROM tiered r
  JOIN tiered_call c ON c.process_id = r.pid AND c.tid = r.tid AND c.width = r.width
    AND c.bucket = r.last_bucket {{same_window c r}}
  WHERE r.last_bucket <> r.first_bucket AND c.ts >= r.ts AND c.ts <= r.end_ts
  UNION ALL
  SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id
  FROM annotated r
  JOIN call c ON c.process_id = r.pid AND c.tid = r.tid {{same_window c r}}
  WHERE r.end_ts - r.ts >= 100000000000 AND c.ts >= r.ts AND c.ts <= r.end_ts
),
range_op AS (
  SELECT {{part i}} i.event_index, i.name, i.ts, i.end_ts, g.ts AS op_ts, g.ts + g.dur AS op_end, g.dur AS op_dur
  FROM inside i
  JOIN gpu_op g ON g.correlation_id = i.correlation_id {{same_window g i}}
),
instance AS (
  SELECT {{part}} event_index, name, MIN(end_ts - ts) AS range_ns,
    MAX(op_end) - MIN(op_ts) AS proj_ns, COUNT(*) AS gpu_ops, SUM(op_dur) AS gpu_busy_ns
  FROM range_op
  GROUP BY {{part}} event_index, name
)
SELECT
  {{part}}
  -- the range's name
  name,
  -- ranges of that name that launched GPU work
  COUNT(*) AS instances,
  -- their summed CPU duration, ns
  SUM(range_ns) AS total_range_ns,
  -- their summed GPU projection (first op start to last op end), ns; its mean, min and max
  SUM(proj_ns) AS total_proj_ns,
  AVG(proj_ns) AS avg_proj_ns,
  MIN(proj_ns) AS min_proj_ns,
  MAX(proj_ns) AS max_proj_ns,
  -- GPU ops launched inside, and their summed duration, ns
  SUM(gpu_ops) AS gpu_ops,
  SUM(gpu_busy_ns) AS gpu_busy_ns
FROM instance
GROUP BY {{part}} name
ORDER BY {{part}} total_proj_ns DESC, name
