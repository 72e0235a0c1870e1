-- nsys_overhead: PROFILER_OVERHEAD as `overhead` rows, every process together. The rows nsys
-- names after CUPTI's overhead kinds get CUPTI's names (`CUPTI: Buffer flush` -> `Buffer
-- Flush`); nsys's own overhead (dlopen, TLS allocation, ...) keeps nsys's name.
CREATE OR REPLACE VIEW nsys_overhead AS
SELECT
  -- the process key the window is cut by (not written)
  (o.globalTid >> 24) << 24 AS _global_pid,
  -- start and end, unix ns
  o.start + s.epoch_ns AS start_ns,
  o."end" + s.epoch_ns AS end_ns,
  -- overhead kind as text
  CASE n.value
    WHEN 'CUPTI: Buffer flush' THEN 'Buffer Flush'
    WHEN 'CUPTI: Instrumentation' THEN 'Instrumentation'
    WHEN 'CUPTI: Resource Management' THEN 'Resource'
    ELSE COALESCE(n.value, 'Unknown')
  END AS name
FROM PROFILER_OVERHEAD o
CROSS JOIN nsys_session s
LEFT JOIN StringIds n ON n.id = o.nameId
