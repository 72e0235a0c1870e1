-- @report kernel_shape_summary: GPU kernels by total time per name and launch shape (grid, block)
-- Follows Nsight Systems' `nsys stats --report cuda_gpu_kern_gb_sum`: kernel_summary split by
-- grid and block dimensions, by total time descending.
SELECT
  {{part}}
  -- kernel name as recorded
  name,
  -- grid and block dimensions, 'XxYxZ'
  concat(grid_x, 'x', grid_y, 'x', grid_z) AS grid,
  concat(block_x, 'x', block_y, 'x', block_z) AS block,
  -- number of executions with this shape
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
GROUP BY {{part}} name, grid_x, grid_y, grid_z, block_x, block_y, block_z
ORDER BY {{part}} total_ns DESC, name, grid, block
