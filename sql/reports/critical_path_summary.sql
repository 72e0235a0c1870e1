-- @report critical_path_summary: per step, what bounds its critical path: the time and share of each cause
-- @param annotation = 'ProfilerStep#%': the ranges to analyze, one path each: CPU annotations whose name is LIKE this
-- @param instance = -1: which of those ranges, counted from 0 in time order in each window (-1: every one)
-- @param infer_syncs = 1: in a window without cuda_sync records, a cudaStreamSynchronize, cudaEventSynchronize or cudaDeviceSynchronize waits for its process's GPU op that ended last while it ran (0: no waits there, as HTA)
-- @param speedup = '': a what-if: `PATTERN=FACTOR` (`;` between rules) weighs the time of ops whose name is LIKE PATTERN, or of a bound_by cause named PATTERN, FACTOR times, and finds the path again ('': as measured)
-- The segments of critical_path summed by bound_by (HTA's critical path summary). The shares
-- of a step add up to 100 %; a segment's own weight counts, so a kernel-kernel gap below 0
-- (an op that started before the previous one ended) takes from its cause's share.
{{include critical_path_graph}}
WITH cause AS (
  SELECT {{part p}} p.step, s.step_name, s.step_end - s.step_ts AS step_ns,
    p.bound_by, p.measured_ns,
    SUM(p.dur_ns) AS dur_ns, COUNT(*) AS segments
  FROM _cp_path p
  JOIN _cp_step s ON s.step = p.step {{same_window s p}}
  WHERE p.bound_by IS NOT NULL
  GROUP BY {{part p}} p.step, s.step_name, s.step_end - s.step_ts, p.bound_by, p.measured_ns
),
path AS (
  SELECT *, SUM(dur_ns) OVER (PARTITION BY {{part}} step) AS path_ns FROM cause
)
SELECT
  {{part}}
  -- the range (step), its name and its length, ns
  step,
  step_name,
  step_ns,
  -- cpu, gpu_compute, gpu_communication, launch_overhead or kernel_kernel_overhead
  bound_by,
  -- time on the path bound by it, ns, and its share of the path's length, %
  dur_ns,
  100.0 * dur_ns / path_ns AS share_pct,
  -- path segments bound by it
  segments,
  -- the path's length, ns (under the what-if's speedup)
  path_ns,
  -- the length of the path as measured, ns (equal to path_ns without a speedup)
  COALESCE(measured_ns, path_ns) AS measured_path_ns,
  -- the step's length if the what-if came true: step_ns less what the path lost, ns
  step_ns - (COALESCE(measured_ns, path_ns) - path_ns) AS whatif_step_ns
FROM path
ORDER BY {{part}} step, bound_by
