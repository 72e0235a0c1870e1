-- @report queue_length: each stream's count of launched but not yet started GPU ops, over time
-- Follows HTA's queue length time series (get_queue_length_time_series): one row per change,
-- the value holds until the next row of its stream (see _queue_step).
SELECT
  {{part}}
  -- device ordinal and stream
  device_id,
  stream_id,
  -- when the length changes, unix ns
  ts,
  -- the length from then on
  queue_length
FROM _queue_step
ORDER BY {{part}} device_id, stream_id, ts, delta DESC
