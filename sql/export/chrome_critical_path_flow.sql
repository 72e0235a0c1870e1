-- @export chrome section=events order=17
-- chrome_critical_path_flow: with `export --critical-path`, an arrow wherever the critical
-- path of a step moves from one track to another (a launch from a CPU thread to a stream,
-- a wait across streams, a GPU op back to the call that synchronized on it): `s` at the end
-- of an op's segment, `f` at the start of the next op's segment, binding to the events
-- there, as HTA's overlaid trace draws its path (category critical_path). A GPU op is on
-- its stream's track (an op of a CUDA graph that the export draws on a resolver lane is
-- not). No rows without the flag.
CREATE OR REPLACE VIEW chrome_critical_path_flow AS
WITH op AS (
  -- the path's op segments, each on its track: a CPU thread, or a device's stream
  SELECT s.step, s.position,
    greatest(CAST(s.ts - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
    greatest(CAST(s.end_ts - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS end_ts,
    COALESCE(s.device_id, s.pid) AS pid,
    CASE WHEN s.device_id IS NULL THEN s.tid ELSE chrome_tid(s.stream_id) END AS tid
  FROM critical_path_segment s
  CROSS JOIN chrome_base b
  WHERE s.type = 'operator'
),
hop AS (
  SELECT *,
    LEAD(pid) OVER next AS next_pid,
    LEAD(tid) OVER next AS next_tid,
    LEAD(ts) OVER next AS next_ts
  FROM op
  WINDOW next AS (PARTITION BY step ORDER BY position)
),
moved AS (
  -- flow ids from 1 << 41, beyond correlation ids and graph edges' (from 1 << 40)
  SELECT *, CAST(2199023255552 + ROW_NUMBER() OVER (ORDER BY step, position) AS BIGINT) AS id
  FROM hop
  WHERE next_pid IS NOT NULL AND (next_pid <> pid OR next_tid <> tid)
)
SELECT
  -- flow start, then its end
  's' AS ph,
  id,
  pid,
  tid,
  -- µs from the trace base
  end_ts AS ts,
  'critical_path' AS cat,
  'critical_path' AS name,
  -- the end binds to the slice it lands in
  CAST(NULL AS VARCHAR) AS bp
FROM moved
UNION ALL
SELECT 'f', id, next_pid, next_tid, next_ts, 'critical_path', 'critical_path', 'e'
FROM moved
