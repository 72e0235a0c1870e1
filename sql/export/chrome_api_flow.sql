-- @export chrome section=events order=9
-- chrome_api_flow: the `s` start of a launch flow on each API call that launches or waits
-- on GPU work (launches, graph launches, memcpy/memset, synchronizations), id = correlation.
CREATE OR REPLACE VIEW chrome_api_flow AS
SELECT
  -- flow start
  's' AS ph,
  -- the call's correlation id
  a.correlation_id AS id,
  -- CPU process and thread
  a.process_id AS pid,
  chrome_tid(a.tid) AS tid,
  -- the call's start, µs
  greatest(CAST(a.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  -- flow category and name
  'ac2g' AS cat,
  'ac2g' AS name
FROM _chrome_api_row a
CROSS JOIN chrome_base b
WHERE a.correlation_id <> 0 AND a.requires_flow
-- the calls' order (see chrome_api), the same from run to run
ORDER BY a.pos
