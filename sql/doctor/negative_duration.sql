-- @check negative_duration severity=error: GPU ops and API calls that end before they start, which makes every sum of durations wrong
-- end_ns < start_ns: a record with an unknown end (0, the sentinel) or a producer that mixed
-- clocks. Sums, overlap clamping and drawing all assume dur >= 0. Fix the producer, or
-- filter `dur >= 0` in queries over such a window.
CREATE OR REPLACE VIEW negative_duration AS
SELECT
  {{part}}
  -- start (unix ns); the gpu_op kind, or 'runtime' / 'driver' for an API call
  ts, kind, name, dur, correlation_id
FROM (
  SELECT {{part}} kind, name, ts, dur, correlation_id FROM gpu_op
  UNION ALL
  SELECT {{part}} domain, name, ts, dur, correlation_id FROM api_call
)
WHERE dur < 0
