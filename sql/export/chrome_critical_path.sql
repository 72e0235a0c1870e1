-- @export chrome section=events order=16
-- chrome_critical_path: with `export --critical-path`, the critical path of each step as a
-- track of its own: a "Critical path" process with a thread per step, whose slices are the
-- path's segments in order (critical_path_segment: the critical_path report's rows), each
-- flagged `critical` with its cause. No rows without the flag. The arrows along the path
-- are chrome_critical_path_flow's.
CREATE OR REPLACE VIEW chrome_critical_path AS
SELECT
  -- metadata names the process and each step's thread; the segments are slices
  'X' AS ph,
  'critical_path' AS cat,
  -- the op the segment's time belongs to, else what the segment is (e.g. sync)
  COALESCE(s.name, s.type) AS name,
  -- the path's own process (a name, as Kineto's string pids), one thread per step
  'Critical path' AS pid,
  s.step_name AS tid,
  -- start and duration, µs from the trace base, never negative; one slice after another
  greatest(CAST(s.draw_ts - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  CAST(s.draw_end - s.draw_ts AS DOUBLE) / 1000.0 AS dur,
  -- the flag, and the report's columns
  1 AS "args.critical",
  s.step AS "args.step",
  s.position AS "args.position",
  s.type AS "args.type",
  s.bound_by AS "args.bound_by",
  -- the time the segment adds to the path, ns (0 for sync and dependency)
  s.dur_ns AS "args.dur_ns",
  CAST(NULL AS VARCHAR) AS "args.name"
FROM critical_path_segment s
CROSS JOIN chrome_base b
UNION ALL
SELECT 'M', NULL, 'process_name', 'Critical path', NULL, 0.0, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, 'Critical path'
FROM (SELECT DISTINCT true FROM critical_path_segment)
UNION ALL
SELECT 'M', NULL, 'thread_name', 'Critical path', step_name AS tid, 0.0, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, step_name AS thread_name
FROM (SELECT DISTINCT step_name FROM critical_path_segment)
