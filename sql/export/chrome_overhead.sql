-- @export chrome section=events order=10
-- chrome_overhead: one Chrome `X` event per kept overhead record (_chrome_overhead_row), on
-- the Overhead process (pid -1, tid 0), with empty args.
CREATE OR REPLACE VIEW chrome_overhead AS
SELECT
  -- event phase and category
  'X' AS ph,
  'overhead' AS cat,
  -- overhead name
  o.name,
  -- the Overhead process and its one thread
  -1 AS pid,
  0 AS tid,
  -- start and duration, µs
  greatest(CAST(o.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(o.end_ns - o.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- empty args object (an empty object spread into it)
  '{}' AS "args.*metadata"
-- (chrome_base first: the one-row side must be the cross join's build side, or the join
-- emits one batch per overhead row)
FROM chrome_base b
CROSS JOIN _chrome_overhead_row o
