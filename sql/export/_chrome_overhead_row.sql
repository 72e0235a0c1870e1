-- _chrome_overhead_row: overhead records the reference keeps: all but an "Activity Buffer
-- Request" that starts after the last end of every other timed kind (the buffer flush that
-- trails the window's real activity).
CREATE OR REPLACE VIEW _chrome_overhead_row AS
SELECT
  -- overhead name, e.g. "CUPTI Instrumentation"
  o.name,
  -- file order
  o.ord,
  -- start and end, unix ns
  o.start_ns,
  o.end_ns
FROM (SELECT *, file_row AS ord FROM overhead) o
-- (the API calls' ends from their tables: api_call would name every call, a join, for it)
CROSS JOIN (
  SELECT COALESCE(max(end_ns), 0) AS last_end FROM (
    SELECT ts + dur AS end_ns FROM gpu_op
    UNION ALL SELECT end_ns FROM cuda_runtime
    UNION ALL SELECT end_ns FROM cuda_driver
    UNION ALL SELECT end_ns FROM cuda_sync
  )
) m
WHERE NOT (o.name = 'Activity Buffer Request' AND m.last_end > 0 AND o.start_ns > m.last_end)
