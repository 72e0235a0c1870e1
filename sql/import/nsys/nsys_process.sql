-- nsys_process: the processes that did GPU work (a kernel, copy or set), one window each.
-- nsys keys a process by `globalPid` = <HW:8><VM:8><PID:24><TID:24> with the TID bits 0;
-- the low 24 bits are cleared here too, so a report that stores a thread key still groups
-- by process. The name comes from PROCESSES when the report has it.
CREATE OR REPLACE VIEW nsys_process AS
SELECT
  -- nsys's process key (TID bits 0)
  g.global_pid,
  -- OS process id
  (g.global_pid >> 24) & 16777215 AS pid,
  -- process name; NULL when PROCESSES lacks it
  MAX(p.name) AS name
FROM (
  SELECT (globalPid >> 24) << 24 AS global_pid FROM CUPTI_ACTIVITY_KIND_KERNEL
  UNION SELECT (globalPid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_MEMCPY
  UNION SELECT (globalPid >> 24) << 24 FROM CUPTI_ACTIVITY_KIND_MEMSET
) g
LEFT JOIN PROCESSES p ON (p.globalPid >> 24) << 24 = g.global_pid
WHERE g.global_pid IS NOT NULL
GROUP BY g.global_pid
