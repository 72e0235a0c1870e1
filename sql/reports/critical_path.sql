-- @report critical_path: the chain of CPU ops, API calls, GPU ops and waits that bounds each step, segment by segment
-- @param annotation = 'ProfilerStep#%': the ranges to analyze, one path each: CPU annotations whose name is LIKE this
-- @param instance = -1: which of those ranges, counted from 0 in time order in each window (-1: every one)
-- @param infer_syncs = 1: in a window without cuda_sync records, a cudaStreamSynchronize, cudaEventSynchronize or cudaDeviceSynchronize waits for its process's GPU op that ended last while it ran (0: no waits there, as HTA)
-- @param speedup = '': a what-if: `PATTERN=FACTOR` (`;` between rules) weighs the time of ops whose name is LIKE PATTERN, or of a bound_by cause named PATTERN, FACTOR times, and finds the path again ('': as measured)
-- HTA's lightweight critical path, one per range: the graph and its heaviest path are built by
-- sql/scripts/critical_path_graph.sql (its rules there, and in docs/reports.md).
{{include critical_path_graph}}
SELECT
  {{part p}}
  -- the range (step) this path bounds: its number and name
  p.step,
  s.step_name,
  -- the segment's place on the path, from 0
  p.position,
  -- what the segment is: 'operator' (a CPU op's, call's or GPU op's own time), 'launch'
  -- (launch delay), 'kernel_kernel' (gap between two ops of a stream), 'sync' or 'dependency'
  -- (an order without time of its own)
  p.type,
  -- what the time was spent on: cpu, gpu_compute, gpu_communication, launch_overhead,
  -- kernel_kernel_overhead; NULL for sync and dependency
  p.bound_by,
  -- the op the segment's time belongs to
  p.name,
  -- where: the CPU thread (pid, tid; for a GPU op, the launching thread) and the GPU stream
  p.pid,
  p.tid,
  p.device_id,
  p.stream_id,
  -- the segment's start and end, unix ns
  p.ts,
  p.end_ts,
  -- the time it adds to the path, ns (0 for sync and dependency), under the what-if's speedup
  p.dur_ns,
  -- its time as measured, ns (dur_ns without the speedup)
  p.measured_dur_ns
FROM _cp_path p
JOIN _cp_step s ON s.step = p.step {{same_window s p}}
ORDER BY {{part p}} p.step, p.position
