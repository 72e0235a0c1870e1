-- _queue_step: the steps of each stream's queue length, as HTA's queue-length counter counts
-- them (get_queue_length_time_series): +1 when a launch call (cudaLaunchKernel[ExC],
-- cuLaunchKernel, cudaMemcpyAsync, cudaMemsetAsync and their HIP peers) starts, -1 when its GPU
-- op starts; only calls with a GPU op, on the op's stream. At one instant a launch counts first.
CREATE OR REPLACE VIEW _queue_step AS
WITH launched AS (
  SELECT {{part}} device_id, stream_id, api_ts, ts
  FROM launch
  WHERE api_name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernel',
    'cudaMemcpyAsync', 'cudaMemsetAsync', 'hipLaunchKernel', 'hipExtModuleLaunchKernel',
    'hipMemcpyAsync', 'hipMemsetAsync', 'hipMemcpyWithStream')
),
step AS (
  SELECT {{part}} device_id, stream_id, api_ts AS ts, 1 AS delta FROM launched
  UNION ALL
  SELECT {{part}} device_id, stream_id, ts, -1 FROM launched
)
SELECT
  {{part}}
  -- device ordinal and stream of the launched op
  device_id,
  stream_id,
  -- when the length changes, unix ns
  ts,
  -- +1 (a launch) or -1 (an op starts)
  delta,
  -- ops launched and not yet started on the stream, after this step
  SUM(delta) OVER (
    PARTITION BY {{part}} device_id, stream_id ORDER BY ts, delta DESC
    ROWS UNBOUNDED PRECEDING) AS queue_length,
  -- when the next step happens on this stream (NULL for the last), unix ns
  LEAD(ts) OVER (PARTITION BY {{part}} device_id, stream_id ORDER BY ts, delta DESC) AS next_ts
FROM step
