-- @report top_ops: CPU operators by the GPU time of the kernels, copies and sets they launched
-- Through the external id: cpu_launch pairs each API call with the innermost CPU operator
-- (cpu_op or user_annotation) that was open when it was made, launch pairs the call with its GPU
-- ops. An op launched outside every CPU operator is not counted.
WITH launched AS (
  SELECT {{part c}} c.cpu_name, c.external_id, l.dur
  FROM cpu_launch c
  JOIN launch l ON l.correlation_id = c.correlation_id {{same_window l c}}
)
SELECT
  {{part}}
  -- the CPU operator's name, e.g. aten::mm
  cpu_name AS name,
  -- distinct operator instances that launched GPU work
  COUNT(DISTINCT external_id) AS calls,
  -- GPU ops they launched
  COUNT(*) AS gpu_ops,
  -- the GPU ops' summed duration, ns
  SUM(dur) AS gpu_ns,
  -- share of the GPU time launched under any operator, percent
  100.0 * SUM(dur) / SUM(SUM(dur)) OVER ({{partition_by_part}}) AS gpu_pct,
  -- GPU time per operator instance, ns
  CAST(SUM(dur) AS DOUBLE) / COUNT(DISTINCT external_id) AS avg_gpu_ns_per_call
FROM launched
GROUP BY {{part}} cpu_name
ORDER BY {{part}} gpu_ns DESC, name
