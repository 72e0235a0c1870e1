-- @export pftrace
-- pftrace_api: the runtime and driver slices of the .pftrace export: the calls chrome draws
-- (_chrome_api_row, same thread join), each launch with the render stages of its
-- correlation (_pftrace_launch_link): a call has one row per stage its correlation launched
-- (`pos` tells a call's rows), the slices merge them. The launches are _chrome_api_row's.
CREATE OR REPLACE VIEW pftrace_api AS
SELECT
  -- processing order: runtime rows, then driver rows, each in file order
  a.pos,
  -- 'cuda_runtime' or 'cuda_driver' (the group and the category)
  a.cat,
  a.name,
  a.cbid,
  a.start_ns,
  a.end_ns,
  -- the CPU process and thread the call is drawn on
  a.process_id,
  a.tid,
  a.correlation_id,
  -- a render-stage event id of a launch (NULL: none)
  CASE WHEN a.launches THEN l.event_id END AS gpu_correlation
FROM _chrome_api_row a
LEFT JOIN _pftrace_launch_link l ON l.correlation_id = a.correlation_id
