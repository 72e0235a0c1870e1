-- annotation_call: each CUDA API call with every annotated CPU range its thread had open when
-- the call started (a Kineto user_annotation / record_function, or an NVTX range of an
-- imported nsys report), nested ranges included: one row per (range, call).
-- A plain join by containment: the engine's interval join (src/engine/interval_join.rs) looks
-- each range's calls up in its thread's calls sorted by start. (Before it, the ranges met calls
-- through buckets of time in six tiers of widths; comparing every range with every call of its
-- thread took minutes on a 10 M-event window.)
CREATE OR REPLACE VIEW annotation_call AS
WITH annotated AS (
  SELECT {{part}} event_index, name, TRY_CAST(pid AS BIGINT) AS pid, TRY_CAST(tid AS BIGINT) AS tid,
    ts_ns AS ts, ts_ns + dur_ns AS end_ts
  FROM cpu_event
  WHERE ph = 'X' AND cat = 'user_annotation' AND dur_ns >= 0
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
)
-- the range: its event_index in cpu_event, name, start and end (unix ns); the call: its
-- correlation id and start
SELECT {{part r}} r.event_index, r.name, r.ts, r.end_ts, c.correlation_id, c.ts AS call_ts
FROM annotated r
JOIN call c ON c.process_id = r.pid AND c.tid = r.tid {{same_window c r}}
  AND c.ts >= r.ts AND c.ts <= r.end_ts
