-- @export held readers_first
-- _chrome_api_row: the runtime and driver API calls (api_call) the reference draws (runtime
-- names not on its blocklist, driver names on its allowlist), each on its CPU thread: the
-- thread of the Kineto op whose external id the call carries (external_correlation, last
-- linked row per correlation wins) when that op is in the call's process, else
-- thread_resource's mapping of the signed low 32 bits of the CUPTI thread id, else those
-- bits themselves.
CREATE OR REPLACE VIEW _chrome_api_row AS
-- external_correlation rows (`ord`: place in the file) whose external id has a CPU thread
WITH linked AS (
  SELECT x.correlation_id, x.ord, t.pid, t.tid
  FROM (SELECT correlation_id, external_id, file_row AS ord
        FROM external_correlation) x
  JOIN _chrome_cpu_thread t ON t.external_id = x.external_id
  WHERE x.correlation_id <> 0
)
SELECT
  -- processing order: runtime rows, then driver rows, each in file order
  a.kind_rank * 4294967296 + a.ord AS pos,
  -- 'cuda_runtime' or 'cuda_driver'
  a.cat,
  -- API name (cbid table, else the window's own `name`, else `cbid_<n>`)
  a.name,
  a.cbid,
  a.start_ns,
  a.end_ns,
  a.process_id,
  a.correlation_id,
  -- the CPU thread the call is drawn on (signed; exported as its absolute value)
  COALESCE(ct.tid, tr.resource_id, a.thread_id_i32) AS tid,
  -- whether the call launches GPU work (its render stages' correlation in .pftrace)
  a.launches,
  -- whether the call starts a launch flow (`s` event): a launch, or a runtime sync
  a.launches OR (a.kind_rank = 0 AND a.name IN ('cudaStreamSynchronize',
                                                'cudaDeviceSynchronize',
                                                'cudaStreamWaitEvent')) AS requires_flow
-- the call's linked thread: built on the narrow side (one row per linked correlation), so
-- the calls stream through in their order rather than being held as the join's table
FROM (
  -- the last linked row of each correlation, found by its place rather than by sorting
  SELECT l.correlation_id, l.pid, l.tid
  FROM linked l
  JOIN (SELECT correlation_id, max(ord) AS ord FROM linked GROUP BY correlation_id) m
    ON m.ord = l.ord
) ct
RIGHT JOIN (
  SELECT *,
    -- the launches: kernels, graphs, any cudaMemcpy*/cudaMemset*, the driver's kernels
    CASE WHEN kind_rank = 0
      THEN name IN ('cudaLaunchKernel', 'cudaLaunchCooperativeKernel',
                    'cudaLaunchCooperativeKernelMultiDevice', 'cudaLaunchKernelExC',
                    'cudaGraphLaunch')
           OR starts_with(name, 'cudaMemcpy') OR starts_with(name, 'cudaMemset')
      ELSE name IN ('cuLaunchKernel', 'cuLaunchKernelEx')
    END AS launches
  FROM (
    SELECT
      CASE domain WHEN 'runtime' THEN 0 ELSE 1 END AS kind_rank,
      CASE domain WHEN 'runtime' THEN 'cuda_runtime' ELSE 'cuda_driver' END AS cat,
      file_row AS ord, cbid, name, ts AS start_ns, ts + dur AS end_ns, process_id,
      correlation_id, thread_id_i32
    FROM api_call
  )
  WHERE (kind_rank = 0 AND name NOT IN ('cudaGetDevice', 'cudaSetDevice', 'cudaGetLastError',
                                        'cudaEventCreate', 'cudaEventCreateWithFlags',
                                        'cudaEventDestroy'))
     OR (kind_rank = 1 AND name IN ('cuLaunchKernel', 'cuLaunchKernelEx', 'cuMemCreate',
                                    'cuMemMap', 'cuMemUnmap', 'cuMemRelease',
                                    'cuMemExportToShareableHandle',
                                    'cuMemImportFromShareableHandle'))
) a
  ON ct.correlation_id = a.correlation_id AND ct.pid = a.process_id
LEFT JOIN (
  SELECT process_id, thread_id, resource_id FROM (
    SELECT process_id, thread_id, resource_id,
      ROW_NUMBER() OVER (PARTITION BY process_id, thread_id ORDER BY ord DESC) AS rn
    FROM (SELECT *, file_row AS ord FROM thread_resource)
  ) WHERE rn = 1
) tr ON tr.process_id = a.process_id AND tr.thread_id = a.thread_id_i32
