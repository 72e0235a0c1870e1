-- @report queue_length_summary: per stream, how long its queue of launched GPU ops grew
-- Follows HTA's get_queue_length_summary (statistics over the steps of _queue_step), plus the
-- time-weighted mean and the time spent at the maximum, which the steps alone do not give.
WITH stat AS (
  SELECT {{part}} device_id, stream_id,
    COUNT(*) AS steps,
    MIN(queue_length) AS min_length,
    MAX(queue_length) AS max_length,
    AVG(queue_length) AS mean_length,
    MEDIAN(queue_length) AS med_length,
    SUM(queue_length * (next_ts - ts)) AS length_ns,
    MAX(next_ts) - MIN(ts) AS span_ns
  FROM _queue_step
  GROUP BY {{part}} device_id, stream_id
),
at_max AS (
  SELECT {{part q}} q.device_id, q.stream_id, SUM(q.next_ts - q.ts) AS time_at_max_ns,
    MIN(q.ts) AS first_max_ts
  FROM _queue_step q
  JOIN stat s ON s.device_id = q.device_id AND s.stream_id = q.stream_id
    AND q.queue_length = s.max_length {{same_window s q}}
  GROUP BY {{part q}} q.device_id, q.stream_id
)
SELECT
  {{part s}}
  -- device ordinal and stream
  s.device_id,
  s.stream_id,
  -- number of steps (HTA's count), and the length's min, max, mean and median over the steps
  s.steps,
  s.min_length,
  s.max_length,
  s.mean_length,
  s.med_length,
  -- the mean length over time, from the stream's first step to its last
  CAST(s.length_ns AS DOUBLE) / NULLIF(s.span_ns, 0) AS time_weighted_mean,
  -- total time at max_length, ns, and when it was first reached, unix ns
  COALESCE(m.time_at_max_ns, 0) AS time_at_max_ns,
  m.first_max_ts
FROM stat s
LEFT JOIN at_max m ON m.device_id = s.device_id AND m.stream_id = s.stream_id {{same_window m s}}
ORDER BY {{part s}} s.device_id, s.stream_id
