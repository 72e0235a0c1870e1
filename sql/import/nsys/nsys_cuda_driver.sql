-- nsys_cuda_driver: the driver calls of _nsys_api_call as `cuda_driver` rows.
CREATE OR REPLACE VIEW nsys_cuda_driver AS
SELECT
  -- the process key the window is cut by (not written)
  a._global_pid,
  -- CUPTI callback id; NULL when the cbid table does not know the name
  a.cbid,
  -- call start and end, unix ns
  a.start_ns,
  a.end_ns,
  -- OS process and thread ids
  a.process_id,
  a.thread_id,
  -- links the call to the GPU ops it launched
  a.correlation_id,
  -- API name without the version suffix, e.g. cudaLaunchKernel
  a.name
FROM _nsys_api_call a
WHERE a.domain = 'driver'
