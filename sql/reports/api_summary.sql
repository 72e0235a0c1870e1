-- @report api_summary: CUDA runtime and driver API calls by total time
-- Follows Nsight Systems' `nsys stats --report cuda_api_sum`: one row per (domain, API name)
-- over the api_call view, by total time descending.
SELECT
  {{part}}
  -- 'runtime' or 'driver'
  domain,
  -- API name without its version suffix, e.g. cudaLaunchKernel
  name,
  -- number of calls
  COUNT(*) AS calls,
  -- summed call duration, ns
  SUM(dur) AS total_ns,
  -- share of all API time in the window, percent
  100.0 * SUM(dur) / SUM(SUM(dur)) OVER ({{partition_by_part}}) AS time_pct,
  -- mean, median, min, max call duration, ns; sample standard deviation, ns
  AVG(dur) AS avg_ns,
  MEDIAN(dur) AS med_ns,
  MIN(dur) AS min_ns,
  MAX(dur) AS max_ns,
  COALESCE(STDDEV(dur), 0) AS stddev_ns
FROM api_call
GROUP BY {{part}} domain, name
ORDER BY {{part}} total_ns DESC, domain, name
