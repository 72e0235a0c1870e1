-- @check zero_duration severity=warning: GPU ops and API calls that last 0 ns, which usually means a timestamp was not recorded
-- Graph event-record nodes are points by construction (end = start) and are left out. Any
-- other op or call takes time; 0 ns means both timestamps are the unknown sentinel 0 or were
-- rounded to one value. They draw as nothing and count as no time.
CREATE OR REPLACE VIEW zero_duration AS
SELECT
  {{part}}
  -- start (unix ns); the gpu_op kind, or 'runtime' / 'driver' for an API call
  ts, kind, name, dur, correlation_id
FROM (
  SELECT {{part}} kind, name, ts, dur, correlation_id FROM gpu_op
  WHERE kind <> 'graph_event_node'
  UNION ALL
  SELECT {{part}} domain, name, ts, dur, correlation_id FROM api_call
)
WHERE dur = 0
