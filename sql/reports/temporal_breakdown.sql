-- @report temporal_breakdown: how the GPU's time splits into idle, compute and non-compute
-- Follows HTA's temporal breakdown (get_temporal_breakdown): over the GPU events HTA sees
-- (_hta_gpu_op), kernel_ns is the span from the first event's start to the last one's end;
-- idle_ns the part of it no event covers; compute_ns the time COMPUTATION kernels cover;
-- non_compute_ns the rest (communication, memory, syncs not overlapped by compute). One row per
-- window (per rank over a rank archive). HTA works in whole µs; these are exact ns.
WITH span AS (
  SELECT {{part}}
    MIN(ts) FILTER (WHERE lane = 'ALL') AS first_ts,
    MAX(end_ts) FILTER (WHERE lane = 'ALL') AS last_end,
    SUM(end_ts - ts) FILTER (WHERE lane = 'ALL') AS busy_ns,
    SUM(end_ts - ts) FILTER (WHERE lane = 'COMPUTATION') AS compute_ns
  FROM _hta_merged
  WHERE lane IN ('ALL', 'COMPUTATION')
  {{group_by_part}}
),
total AS (
  SELECT {{part}}
    last_end - first_ts AS kernel_ns,
    last_end - first_ts - busy_ns AS idle_ns,
    COALESCE(compute_ns, 0) AS compute_ns
  FROM span
)
SELECT
  {{part}}
  -- time no GPU event covers, ns
  idle_ns,
  -- time COMPUTATION kernels cover, ns
  compute_ns,
  -- busy time not covered by computation, ns
  kernel_ns - compute_ns - idle_ns AS non_compute_ns,
  -- first GPU event's start to the last one's end, ns
  kernel_ns,
  -- the three shares of kernel_ns, percent
  100.0 * idle_ns / NULLIF(kernel_ns, 0) AS idle_pct,
  100.0 * compute_ns / NULLIF(kernel_ns, 0) AS compute_pct,
  100.0 * (kernel_ns - compute_ns - idle_ns) / NULLIF(kernel_ns, 0) AS non_compute_pct
FROM total
ORDER BY {{part}} kernel_ns
