-- @report launch_stats: every kernel, copy and set launch: CPU call time, GPU time, launch delay
-- @param runtime_cutoff_ns = 50000: a launch call longer than this is a runtime outlier (HTA: 50 µs)
-- @param launch_delay_cutoff_ns = 100000: a launch delay longer than this is an outlier (HTA: 100 µs)
-- Follows HTA's kernel launch statistics (get_cuda_kernel_launch_stats, memory events
-- included): the calls cudaLaunchKernel, cudaLaunchKernelExC, cudaMemcpyAsync and
-- cudaMemsetAsync joined with their GPU ops through the launch view. The launch delay is from
-- the call's end to the op's start, 0 when the op started first.
SELECT
  {{part}}
  -- the call's correlation id, and its name
  correlation_id,
  api_name,
  -- the GPU op's name
  name,
  -- call start, unix ns
  api_ts,
  -- call duration (HTA's cpu_duration), ns
  api_dur AS cpu_duration_ns,
  -- the GPU op's duration, ns
  dur AS gpu_duration_ns,
  -- op start minus call end, at least 0, ns
  greatest(ts - api_ts - api_dur, 0) AS launch_delay_ns,
  -- the op ran shorter than its launch call took (HTA's "short GPU kernels")
  dur < api_dur AS short_kernel,
  -- the call took longer than runtime_cutoff_ns
  api_dur > {{param runtime_cutoff_ns}} AS runtime_outlier,
  -- the delay exceeded launch_delay_cutoff_ns
  greatest(ts - api_ts - api_dur, 0) > {{param launch_delay_cutoff_ns}} AS delay_outlier
FROM launch
WHERE api_name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cudaMemcpyAsync', 'cudaMemsetAsync')
ORDER BY {{part}} api_ts, correlation_id, ts
