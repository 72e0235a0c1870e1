-- @report kernel_summary: GPU kernels by total time, with their duration statistics
-- Follows Nsight Systems' `nsys stats --report cuda_gpu_kern_sum`: one row per kernel name
-- (eager and CUDA-graph launches alike), by total time descending. Exact ns, as recorded.
SELECT
  {{part}}
  -- kernel name as recorded (demangled where the producer demangled it)
  name,
  -- number of executions
  COUNT(*) AS instances,
  -- summed duration, ns
  SUM(end_ns - start_ns) AS total_ns,
  -- share of all kernel time in the window, percent
  100.0 * SUM(end_ns - start_ns) / SUM(SUM(end_ns - start_ns)) OVER ({{partition_by_part}}) AS time_pct,
  -- mean, median, min, max duration, ns; sample standard deviation, ns (0 for one instance)
  AVG(end_ns - start_ns) AS avg_ns,
  MEDIAN(end_ns - start_ns) AS med_ns,
  MIN(end_ns - start_ns) AS min_ns,
  MAX(end_ns - start_ns) AS max_ns,
  COALESCE(STDDEV(end_ns - start_ns), 0) AS stddev_ns
FROM kernel
GROUP BY {{part}} name
ORDER BY {{part}} total_ns DESC, name
