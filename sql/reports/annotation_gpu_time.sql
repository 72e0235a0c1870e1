-- @report annotation_gpu_time: per annotated CPU range name: its CPU time and the GPU work it launched
-- Follows Nsight Systems' `nsys stats --report nvtx_gpu_proj_sum`: a range (a Kineto
-- user_annotation / record_function, or an NVTX range of an imported nsys report) owns the
-- API calls its thread made while it was open, nested ranges included, and so the GPU ops
-- those calls launched. The range's projection onto the GPU runs from its first op's start to
-- its last op's end. Only ranges that launched GPU work are counted.
-- (The ranges' calls: the `annotation_call` view.)
WITH range_op AS (
  SELECT {{part i}} i.event_index, i.name, i.ts, i.end_ts, g.ts AS op_ts, g.ts + g.dur AS op_end, g.dur AS op_dur
  FROM annotation_call i
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
