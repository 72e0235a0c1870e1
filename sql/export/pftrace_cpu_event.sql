-- @export pftrace
-- pftrace_cpu_event: the CPU trace's events the .pftrace draws, in trace order: the
-- `process_name` and `thread_name` metadata events that name its tracks, and the CPU
-- slices, every duration event outside the profiler's own category (`Trace`) and the
-- categories the window itself draws (a missing category is a slice's).
CREATE OR REPLACE VIEW pftrace_cpu_event AS
SELECT
  -- position in the CPU trace's traceEvents
  event_index,
  -- the event as written, which the sink reads its members from
  raw
FROM cpu_event
WHERE (ph = 'M' AND name IN ('process_name', 'thread_name'))
   OR (ph = 'X' AND COALESCE(cat, '') NOT IN (
         'Trace', 'kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation',
         'cuda_runtime', 'cuda_driver', 'cuda_sync', 'overhead',
         'graph_event_node', 'graph_host_node'))
