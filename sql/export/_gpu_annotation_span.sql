-- _gpu_annotation_span: GPU-side spans of named user regions, in unix ns, and as the
-- reference's Chrome µs (padded by 1 ns each side, clamped at the trace base, float
-- arithmetic): Chrome writes those, and the .pftrace rounds them back to ns as the reference
-- does. A kernel, memcpy or memset whose correlation id maps (external_correlation, last row
-- per correlation wins) to a user_external_id named in user_annotation widens the span of
-- that region on the op's device and capture stream (never its resolver lane). A span on a
-- stream where every op was moved to a lane would float alone, so it is dropped.
CREATE OR REPLACE VIEW _gpu_annotation_span AS
SELECT
  -- the region's name and external id
  u.name,
  s.user_external_id,
  -- device and capture stream
  s.device_id,
  s.stream_id,
  -- the first op's start and the last op's end, unix ns
  s.start_ns,
  s.end_ns,
  -- span start minus 1 ns and duration plus 2 ns, µs from the trace base (the reference's
  -- float arithmetic; exact ns only while the span lies within ~10^16 ns of the base)
  greatest(CAST(s.start_ns - b.base_ns AS DOUBLE) / 1000.0 - 0.001, 0.0) AS ts_us,
  greatest(CAST(s.end_ns - s.start_ns AS DOUBLE) / 1000.0 + 0.002, 0.0) AS dur_us
FROM (
  SELECT c.user_external_id, g.device_id, g.stream_id,
    min(g.start_ns) AS start_ns, max(g.end_ns) AS end_ns
  FROM _chrome_gpu_row g
  JOIN (
    SELECT correlation_id, last_value(user_external_id ORDER BY file_row) AS user_external_id
    FROM external_correlation
    WHERE correlation_id <> 0
      AND user_external_id IN (SELECT external_id FROM user_annotation)
    GROUP BY correlation_id
  ) c ON c.correlation_id = g.correlation_id
  WHERE g.pos < 3 * 4294967296 -- kernel, gpu_memcpy, gpu_memset
  GROUP BY c.user_external_id, g.device_id, g.stream_id
) s
JOIN (
  SELECT external_id, last_value(name ORDER BY file_row) AS name
  FROM user_annotation
  GROUP BY external_id
) u ON u.external_id = s.user_external_id AND u.name IS NOT NULL
JOIN (
  -- the streams an op stays on (a hash join against distinct keys: a semi join against
  -- every op, each span of a stream matching all of them, was quadratic in the stream size)
  SELECT device_id, stream_id
  FROM _chrome_gpu_row
  WHERE pos < 3 * 4294967296 AND lane IS NULL
  GROUP BY device_id, stream_id
) d ON d.device_id = s.device_id AND d.stream_id = s.stream_id
CROSS JOIN chrome_base b
