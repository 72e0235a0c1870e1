-- @check launch_without_gpu_op severity=warning: kernel and graph launch calls with no GPU op, so the work they launched is missing
-- A kernel launch (cudaLaunchKernel and its cooperative and Ex forms, cuLaunchKernel[Ex]) or a
-- graph launch (cudaGraphLaunch, cuGraphLaunch) puts GPU ops with its correlation id on the
-- device. Without one, the activity buffer lost records (see the overhead table) or the op
-- started after the window's boundary (a few at the window's end are expected: ops are
-- bucketed by their own start). Copies and sets are left out: a synchronous copy of
-- pageable memory or a zero-byte one may run without a record.
CREATE OR REPLACE VIEW launch_without_gpu_op AS
SELECT
  {{part a}}
  -- the call (see api_call)
  a.ts, a.domain, a.name, a.dur, a.process_id, a.thread_id, a.correlation_id
FROM api_call a
LEFT JOIN gpu_op g ON g.correlation_id = a.correlation_id {{same_window g a}}
WHERE g.correlation_id IS NULL
  AND a.name IN ('cudaLaunchKernel', 'cudaLaunchCooperativeKernel',
                 'cudaLaunchCooperativeKernelMultiDevice', 'cudaLaunchKernelExC',
                 'cuLaunchKernel', 'cuLaunchKernelEx', 'cuLaunchCooperativeKernel',
                 'cudaGraphLaunch', 'cuGraphLaunch')
