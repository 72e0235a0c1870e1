-- @export chrome section=events order=8
-- chrome_api: one Chrome `X` event per drawn runtime/driver API call (_chrome_api_row), on
-- its CPU process and thread.
CREATE OR REPLACE VIEW chrome_api AS
SELECT
  -- event phase; category cuda_runtime or cuda_driver
  'X' AS ph,
  a.cat,
  -- API name
  a.name,
  -- CPU process and thread
  a.process_id AS pid,
  chrome_tid(a.tid) AS tid,
  -- start and duration, µs
  greatest(CAST(a.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(a.end_ns - a.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- callback id and correlation id
  a.cbid AS "args.cbid",
  a.correlation_id AS "args.correlation"
FROM _chrome_api_row a
CROSS JOIN chrome_base b
-- the reference's order (runtime calls, then driver calls, each in file order); the held
-- rows come in an order that changes from run to run
ORDER BY a.pos
