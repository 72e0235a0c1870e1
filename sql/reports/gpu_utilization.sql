-- @report gpu_utilization: how busy each stream of each device was, over the window in equal bins
-- @param bins = 100: number of equal time bins from the first GPU op's start to the last one's end
-- The ops of gpu_op_clamped (ends clamped so that ops on one stream never overlap) are cut at
-- bin edges; a bin's busy time is the sum of the pieces in it. Bins without work have no row.
WITH span AS (
  SELECT {{part}} MIN(ts) AS t0, MAX(ts + dur) AS t1 FROM gpu_op {{group_by_part}}
),
bin_width AS (
  SELECT {{part}} t0, greatest(CAST(ceil((t1 - t0) / CAST({{param bins}} AS DOUBLE)) AS BIGINT), 1) AS width
  FROM span
),
op AS (
  SELECT {{part o}} o.device_id, o.stream_id, o.ts, o.ts + o.dur AS end_ts,
    (o.ts - b.t0) / b.width AS first_bin, (o.ts + o.dur - 1 - b.t0) / b.width AS last_bin
  FROM gpu_op_clamped o
  JOIN bin_width b ON TRUE {{same_window o b}}
  WHERE o.dur > 0
),
piece AS (
  -- most ops lie within one bin; the few that span several meet the bins they cover
  SELECT {{part}} device_id, stream_id, ts, end_ts, first_bin AS bin
  FROM op
  WHERE first_bin = last_bin
  UNION ALL
  SELECT {{part o}} o.device_id, o.stream_id, o.ts, o.end_ts, b.value AS bin
  FROM op o
  JOIN range({{param bins}}) b ON b.value >= o.first_bin AND b.value <= o.last_bin
  WHERE o.first_bin < o.last_bin
),
bounded AS (
  SELECT {{part p}} p.device_id, p.stream_id, p.bin,
    b.t0 + p.bin * b.width AS bin_start_ns, b.t0 + (p.bin + 1) * b.width AS bin_end_ns,
    least(p.end_ts, b.t0 + (p.bin + 1) * b.width) - greatest(p.ts, b.t0 + p.bin * b.width) AS busy_ns
  FROM piece p
  JOIN bin_width b ON TRUE {{same_window p b}}
)
SELECT
  {{part}}
  -- device ordinal and stream
  device_id,
  stream_id,
  -- bin number from 0, and its bounds, unix ns
  bin,
  bin_start_ns,
  bin_end_ns,
  -- time the stream ran an op within the bin, ns
  SUM(busy_ns) AS busy_ns,
  -- that time over the bin's length, percent
  100.0 * SUM(busy_ns) / (bin_end_ns - bin_start_ns) AS busy_pct
FROM bounded
GROUP BY {{part}} device_id, stream_id, bin, bin_start_ns, bin_end_ns
ORDER BY {{part}} device_id, stream_id, bin
