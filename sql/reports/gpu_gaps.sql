-- @report gpu_gaps: stretches of at least min_gap_ns in which a device ran no GPU op at all
-- @param min_gap_ns = 1000000: shortest gap reported, ns (default 1 ms)
-- Follows the Nsight Systems recipe `gpu_gaps`: on each device, ops of every stream sorted by
-- start; a gap opens where an op starts after every earlier op on the device has ended. Time
-- before the first op and after the last is not a gap.
WITH op AS (
  SELECT {{part}} device_id, ts,
    MAX(ts + dur) OVER (
      PARTITION BY {{part}} device_id ORDER BY ts, dur
      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until
  FROM gpu_op
)
SELECT
  {{part}}
  -- device ordinal
  device_id,
  -- the gap: from the end of the last op before it to the start of the next, unix ns
  busy_until AS start_ns,
  ts AS end_ns,
  -- its length, ns
  ts - busy_until AS gap_ns
FROM op
WHERE ts - busy_until >= {{param min_gap_ns}}
ORDER BY {{part}} device_id, start_ns
