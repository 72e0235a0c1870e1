-- @export chrome section=metadata order=1
-- chrome_metadata: the window's Chrome metadata (`M`) events of its GPU side, as the reference
-- builds them: name, label and sort index of every GPU process (devices seen in GPU ops or
-- syncs, at their first row's start); name and sort index of every GPU lane (streams,
-- resolver lanes with their names, sync streams); and the Overhead process when an overhead
-- event is drawn. The CPU side is chrome_cpu_metadata's, a plan of its own so that the
-- export never holds the API calls' rows and the GPU ops' rows at once.
CREATE OR REPLACE VIEW chrome_metadata AS
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
  -- GPU processes
  SELECT 0 AS section, k.i, k.name,
    greatest(CAST(d.first_start - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
    d.device_id AS pid, 0 AS thread,
    CASE WHEN k.name = 'process_name' THEN 'python' END AS arg_name,
    CASE WHEN k.name = 'process_labels' THEN concat('GPU ', CAST(d.device_id AS VARCHAR)) END
      AS arg_labels,
    CASE WHEN k.name = 'process_sort_index' THEN 5000000 + d.device_id END AS arg_sort_index
  FROM (
    SELECT device_id, first_value(start_ns ORDER BY pos) AS first_start
    FROM (
      SELECT device_id, start_ns, pos FROM _chrome_gpu_row
      UNION ALL
      SELECT device_id, start_ns, 5 * 4294967296 + ord FROM _chrome_sync_row
    )
    GROUP BY device_id
  ) d
  CROSS JOIN (VALUES (0, 'process_name'), (1, 'process_labels'), (2, 'process_sort_index'))
    AS k(i, name)
  CROSS JOIN chrome_base b
  UNION ALL
  -- GPU lanes: streams, resolver lanes (named when the resolver named them), sync streams
  SELECT 1, k.i, k.name, 0.0, s.device_id, s.stream,
    CASE WHEN k.name = 'thread_name'
      THEN COALESCE(n.lane_name, concat('stream ', CAST(s.stream AS VARCHAR), ' ')) END,
    CAST(NULL AS VARCHAR),
    CASE WHEN k.name = 'thread_sort_index' THEN s.stream END
  FROM (
    SELECT DISTINCT device_id, stream FROM (
      SELECT device_id, stream_id AS stream FROM _chrome_gpu_row
      UNION ALL
      SELECT device_id, lane FROM _chrome_gpu_row WHERE lane IS NOT NULL
      UNION ALL
      SELECT device_id, stream FROM _chrome_sync_row
    )
  ) s
  LEFT JOIN (
    SELECT device_id, lane, last_value(lane_name ORDER BY pos) AS lane_name
    FROM _chrome_gpu_row
    WHERE lane IS NOT NULL AND lane_name IS NOT NULL
    GROUP BY device_id, lane
  ) n ON n.device_id = s.device_id AND n.lane = s.stream
  CROSS JOIN (VALUES (0, 'thread_name'), (1, 'thread_sort_index')) AS k(i, name)
  UNION ALL
  -- the Overhead process and its thread
  SELECT 2, k.i, k.name, 0.0, -1, 0, k.arg_name, k.arg_labels, k.arg_sort_index
  FROM (VALUES
    (0, 'process_name', 'python', CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT)),
    (1, 'process_labels', NULL, 'Overhead', NULL),
    (2, 'process_sort_index', NULL, NULL, 16777216),
    (3, 'thread_name', 'thread 0', NULL, NULL),
    (4, 'thread_sort_index', NULL, NULL, 0)
  ) AS k(i, name, arg_name, arg_labels, arg_sort_index)
  WHERE EXISTS (SELECT 1 FROM _chrome_overhead_row)
) m
-- the reference's order: GPU processes by device, lanes by (device, stream), then Overhead;
-- each one's events in the reference's order (the lanes are a DISTINCT, whose order changes
-- from run to run)
ORDER BY m.section, m.pid, m.thread, m.i
