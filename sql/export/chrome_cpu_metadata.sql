-- @export chrome section=metadata order=2
-- chrome_cpu_metadata: the window's Chrome metadata (`M`) events of its CPU side, as the
-- reference builds them: name, label and sort index of every CPU process (processes of drawn
-- API calls, at their first call's start); name and sort index of every CPU thread of a
-- drawn call. Written right after chrome_metadata's events (the reference writes them
-- between its GPU processes and GPU lanes; event order within the metadata is free).
CREATE OR REPLACE VIEW chrome_cpu_metadata AS
SELECT
  -- metadata event
  'M' AS ph,
  -- process_name, process_labels, process_sort_index, thread_name or thread_sort_index
  m.name,
  -- µs
  m.ts,
  -- process, thread (absolute value)
  m.pid,
  chrome_tid(m.thread) AS tid,
  -- the one arg of the event: its name, labels or sort index
  m.arg_name AS "args.name",
  m.arg_labels AS "args.labels",
  m.arg_sort_index AS "args.sort_index"
FROM (
  -- CPU processes
  SELECT 0 AS section, k.i, k.name,
    greatest(CAST(p.first_start - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
    p.process_id AS pid, 0 AS thread,
    CASE WHEN k.name = 'process_name' THEN 'python' END AS arg_name,
    CASE WHEN k.name = 'process_labels' THEN 'CPU' END AS arg_labels,
    CASE WHEN k.name = 'process_sort_index' THEN p.process_id END AS arg_sort_index
  FROM (
    SELECT process_id, first_value(start_ns ORDER BY pos) AS first_start
    FROM _chrome_api_row
    GROUP BY process_id
  ) p
  CROSS JOIN (VALUES (0, 'process_name'), (1, 'process_labels'), (2, 'process_sort_index'))
    AS k(i, name)
  CROSS JOIN chrome_base b
  UNION ALL
  -- CPU threads
  SELECT 1, k.i, k.name, 0.0, t.process_id, t.tid,
    CASE WHEN k.name = 'thread_name' THEN concat('thread ', CAST(t.tid AS VARCHAR)) END,
    CAST(NULL AS VARCHAR),
    CASE WHEN k.name = 'thread_sort_index' THEN t.tid END
  FROM (SELECT DISTINCT process_id, tid FROM _chrome_api_row) t
  CROSS JOIN (VALUES (0, 'thread_name'), (1, 'thread_sort_index')) AS k(i, name)
) m
-- the reference's order: processes, then threads by (process, thread); each one's events in
-- the reference's order (the threads are a DISTINCT, whose order changes from run to run)
ORDER BY m.section, m.pid, m.thread, m.i
