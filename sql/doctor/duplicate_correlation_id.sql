-- @check duplicate_correlation_id severity=error: correlation ids shared by several API calls, so launch and cpu_launch pair ops with the wrong call
-- CUPTI gives every runtime and driver call its own correlation id (0 = none, left out), and
-- the views join GPU ops to calls on it: a duplicate multiplies the op's rows in launch and
-- attributes it to a call that did not launch it. Usually two windows or two processes' records
-- were merged into one window; correlation ids restart per process run. One row per id.
CREATE OR REPLACE VIEW duplicate_correlation_id AS
SELECT
  {{part}}
  correlation_id,
  -- calls with this id
  count(*) AS calls,
  -- the first and last of them: start (unix ns) and name
  min(ts) AS first_ts,
  max(ts) AS last_ts,
  min(name) AS a_name,
  max(name) AS another_name
FROM api_call
WHERE correlation_id <> 0
GROUP BY {{part}} correlation_id
HAVING count(*) > 1
