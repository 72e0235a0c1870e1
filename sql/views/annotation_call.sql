-- annotation_call: each CUDA API call with every annotated CPU range its thread had open when
-- the call started (a Kineto user_annotation / record_function, or an NVTX range of an
-- imported nsys report), nested ranges included: one row per (range, call).
-- Ranges meet calls through equi-joins on buckets of time: a range shorter than a tier's
-- bucket width (1 ms, 10 ms, ..., 100 s; each range in the narrowest tier it fits) covers at
-- most two of that tier's buckets, so a call inside it lies in its first or its last bucket.
-- Only ranges of 100 s or more are compared with every call of their thread. (Comparing every
-- range longer than 1 ms with every call of its thread took minutes on a 10 M-event window.)
CREATE OR REPLACE VIEW annotation_call AS
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
)
-- the range: its event_index in cpu_event, name, start and end (unix ns); the call: its
-- correlation id and start
SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id, c.ts AS call_ts
FROM tiered r
JOIN tiered_call c ON c.process_id = r.pid AND c.tid = r.tid AND c.width = r.width
  AND c.bucket = r.first_bucket {{same_window c r}}
WHERE c.ts >= r.ts AND c.ts <= r.end_ts
UNION ALL
SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id, c.ts AS call_ts
FROM tiered r
JOIN tiered_call c ON c.process_id = r.pid AND c.tid = r.tid AND c.width = r.width
  AND c.bucket = r.last_bucket {{same_window c r}}
WHERE r.last_bucket <> r.first_bucket AND c.ts >= r.ts AND c.ts <= r.end_ts
UNION ALL
SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id, c.ts AS call_ts
FROM annotated r
JOIN call c ON c.process_id = r.pid AND c.tid = r.tid {{same_window c r}}
WHERE r.end_ts - r.ts >= 100000000000 AND c.ts >= r.ts AND c.ts <= r.end_ts
