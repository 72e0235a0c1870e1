-- _chrome_cpu_thread: the CPU thread of each Kineto external id, as the reference maps it:
-- X events of category cpu_op or user_annotation with integer pid and tid and an
-- args["External id"] (cpu_event also reads older Kineto's "external id"; the reference does
-- not); when several events share an id, the last one in the trace wins.
CREATE OR REPLACE VIEW _chrome_cpu_thread AS
SELECT
  -- the Kineto external id (what CUPTI's external_correlation records)
  external_id,
  -- the CPU op's pid and tid
  CAST(pid AS BIGINT) AS pid,
  CAST(tid AS BIGINT) AS tid
FROM (
  SELECT external_id, pid, tid,
    ROW_NUMBER() OVER (PARTITION BY external_id ORDER BY event_index DESC) AS rn
  FROM cpu_event
  WHERE ph = 'X'
    AND cat IN ('cpu_op', 'user_annotation')
    AND external_id IS NOT NULL
    AND strpos(args, '"External id"') > 0
    AND regexp_like(pid, '^-?[0-9]+$')
    AND regexp_like(tid, '^-?[0-9]+$')
)
WHERE rn = 1
