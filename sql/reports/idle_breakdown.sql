-- @report idle_breakdown: why each stream sat idle: waiting for the host, between kernels, other
-- @param kernel_wait_ns = 30000: a gap shorter than this is kernel wait (HTA's consecutive_kernel_delay, 30 µs)
-- Follows HTA's idle time breakdown (get_idle_time_breakdown): on each stream, kernels, copies
-- and sets in start order; the idle interval before an op is its start minus the previous
-- op's end (negative when they overlap; HTA sums those too). It is host_wait when the launching
-- API call started after the previous op ended, kernel_wait when shorter than kernel_wait_ns,
-- other otherwise (the stream's first op has no interval).
WITH op AS (
  SELECT {{part g}} g.device_id, g.stream_id, g.ts, g.end_ts, a.ts AS api_ts
  FROM _hta_gpu_op g
  LEFT JOIN api_call a ON a.correlation_id = g.correlation_id AND g.correlation_id <> 0 {{same_window a g}}
  WHERE g.kind IN ('kernel', 'gpu_memcpy', 'gpu_memset')
),
gap AS (
  SELECT *,
    LAG(end_ts) OVER (PARTITION BY {{part}} device_id, stream_id ORDER BY ts, end_ts) AS prev_end
  FROM op
),
categorized AS (
  SELECT *,
    ts - prev_end AS idle_interval,
    CASE
      WHEN api_ts > prev_end THEN 'host_wait'
      WHEN ts - prev_end < {{param kernel_wait_ns}} THEN 'kernel_wait'
      ELSE 'other'
    END AS idle_category
  FROM gap
)
SELECT
  {{part}}
  -- device ordinal and stream
  device_id,
  stream_id,
  -- host_wait, kernel_wait or other
  idle_category,
  -- summed idle intervals, ns
  COALESCE(SUM(idle_interval), 0) AS idle_ns,
  -- share of the stream's idle time, 0 to 1 (as HTA's idle_time_ratio)
  CAST(COALESCE(SUM(idle_interval), 0) AS DOUBLE)
    / NULLIF(SUM(COALESCE(SUM(idle_interval), 0)) OVER (PARTITION BY {{part}} device_id, stream_id), 0) AS idle_ratio
FROM categorized
GROUP BY {{part}} device_id, stream_id, idle_category
ORDER BY {{part}} device_id, stream_id, idle_category
