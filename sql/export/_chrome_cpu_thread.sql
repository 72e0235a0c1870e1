-- @export held
-- _chrome_cpu_thread: the CPU thread of each Kineto external id, as the reference maps it:
-- X events of category cpu_op or user_annotation with integer pid and tid and an
-- args["External id"] (cpu_event also reads older Kineto's "external id"; the reference does
-- not); when several events share an id, the last one in the trace wins (found by its place,
-- `event_index`, rather than by sorting the events).
CREATE OR REPLACE VIEW _chrome_cpu_thread AS
SELECT
  -- the Kineto external id (what CUPTI's external_correlation records)
  m.external_id,
  -- the CPU op's pid and tid
  CAST(e.pid AS BIGINT) AS pid,
  CAST(e.tid AS BIGINT) AS tid
FROM (
  SELECT external_id, max(event_index) AS event_index
  FROM cpu_event
  WHERE ph = 'X'
    AND cat IN ('cpu_op', 'user_annotation')
    AND external_id IS NOT NULL
    AND strpos(args, '"External id"') > 0
    AND regexp_like(pid, '^-?[0-9]+$')
    AND regexp_like(tid, '^-?[0-9]+$')
  GROUP BY external_id
) m
JOIN cpu_event e ON e.event_index = m.event_index
