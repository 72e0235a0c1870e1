-- nsys_cuda_driver: the driver calls of _nsys_api as `cuda_driver` rows. The cbid comes from the name
-- through tracesql's cbid table: the exact enumerator name first, else the name without its
-- version suffix (lowest cbid). A name the table lacks gets a NULL cbid and keeps its name in
-- `name`, which the views and exports show for it.
CREATE OR REPLACE VIEW nsys_cuda_driver AS
SELECT
  -- the process key the window is cut by (not written)
  a._global_pid,
  -- CUPTI callback id; NULL when the cbid table does not know the name
  COALESCE(raw.cbid, short.cbid) AS cbid,
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
FROM _nsys_api a
LEFT JOIN (SELECT raw_name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'driver' GROUP BY raw_name) raw
  ON raw.raw_name = a.raw_name
LEFT JOIN (SELECT name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'driver' GROUP BY name) short
  ON short.name = a.name
WHERE a.domain = 'driver'
