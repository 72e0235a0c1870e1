-- chrome_trace_span: the "PyTorch Profiler (0)" span the exporter regenerates over every
-- duration (`X`) event of the output (CPU trace and window, the Trace category aside), and
-- its two instants: "Iteration Start" at the first start, "Record Window End" 1 ns after
-- the last end. No row when there is no duration event (an empty window).
CREATE OR REPLACE VIEW chrome_trace_span AS
WITH x AS (
  SELECT ts, dur FROM chrome_kernel
  UNION ALL SELECT ts, dur FROM chrome_memcpy
  UNION ALL SELECT ts, dur FROM chrome_memset
  UNION ALL SELECT ts, dur FROM chrome_event_node
  UNION ALL SELECT ts, dur FROM chrome_host_node
  UNION ALL SELECT ts, dur FROM chrome_api
  UNION ALL SELECT ts, dur FROM chrome_overhead
  UNION ALL SELECT ts, dur FROM chrome_cuda_sync
  UNION ALL SELECT ts, dur FROM chrome_gpu_user_annotation
  UNION ALL
  SELECT CAST(COALESCE(c.ts_ns - b.cpu_base_ns, 0) AS DOUBLE) / 1000.0,
    CAST(COALESCE(c.dur_ns, 0) AS DOUBLE) / 1000.0
  FROM chrome_cpu_event c
  CROSS JOIN chrome_base b
  WHERE c.ph = 'X' AND (c.cat IS DISTINCT FROM 'Trace')
),
m AS (
  SELECT min(ts) AS min_ts, greatest(max(ts + greatest(dur, 0.0)), 0.0) AS max_end
  FROM x
)
SELECT
  -- phase: the X span, then the two global (`s` = g) instants
  'X' AS ph,
  CAST(NULL AS VARCHAR) AS s,
  'Trace' AS cat,
  'PyTorch Profiler (0)' AS name,
  -- Kineto's string pid/tid rows
  'Spans' AS pid,
  'PyTorch Profiler' AS tid,
  -- µs
  min_ts AS ts,
  greatest(max_end - min_ts, 0.0) AS dur,
  -- Kineto's op count, always 0 here
  0 AS "args.Op count"
FROM m WHERE min_ts IS NOT NULL
UNION ALL
SELECT 'i', 'g', NULL, 'Iteration Start: PyTorch Profiler', 'Traces', 'Trace PyTorch Profiler',
  min_ts, NULL, NULL
FROM m WHERE min_ts IS NOT NULL
UNION ALL
SELECT 'i', 'g', NULL, 'Record Window End', '', '', max_end + 0.001, NULL, NULL
FROM m WHERE min_ts IS NOT NULL
