-- @export chrome section=events order=12
-- chrome_gpu_user_annotation: GPU-side spans of named user regions. A kernel, memcpy or
-- memset whose correlation id maps (external_correlation, last row per correlation wins) to
-- a user_external_id named in user_annotation widens the span of that region on the op's
-- device and capture stream (never its resolver lane). A span on a stream where every op was
-- moved to a lane would float alone, so it is dropped. Edges are padded by 1 ns each side.
CREATE OR REPLACE VIEW chrome_gpu_user_annotation AS
SELECT
  -- event phase and category
  'X' AS ph,
  'gpu_user_annotation' AS cat,
  -- the region's name
  u.name,
  -- device as process, capture stream as thread
  s.device_id AS pid,
  chrome_tid(s.stream_id) AS tid,
  -- span start minus 1 ns and duration plus 2 ns, µs
  greatest(CAST(s.start_ns - b.base_ns AS DOUBLE) / 1000.0 - 0.001, 0.0) AS ts,
  greatest(CAST(s.end_ns - s.start_ns AS DOUBLE) / 1000.0 + 0.002, 0.0) AS dur,
  -- the region's external id
  s.user_external_id AS "args.External id"
FROM (
  SELECT c.user_external_id, g.device_id, g.stream_id,
    min(g.start_ns) AS start_ns, max(g.end_ns) AS end_ns
  FROM _chrome_gpu_row g
  JOIN (
    SELECT correlation_id, last_value(user_external_id ORDER BY ord) AS user_external_id
    FROM (SELECT x.correlation_id, x.user_external_id, x.ord
          FROM (SELECT correlation_id, user_external_id, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord
                FROM external_correlation) x
          WHERE x.correlation_id <> 0
            AND x.user_external_id IN (SELECT external_id FROM user_annotation))
    GROUP BY correlation_id
  ) c ON c.correlation_id = g.correlation_id
  WHERE g.pos < 3 * 4294967296 -- kernel, gpu_memcpy, gpu_memset
  GROUP BY c.user_external_id, g.device_id, g.stream_id
) s
JOIN (
  SELECT external_id, last_value(name ORDER BY ord) AS name
  FROM (SELECT external_id, name, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord FROM user_annotation)
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
-- the reference's order (sorted span keys), the same from run to run
ORDER BY s.user_external_id, s.device_id, s.stream_id
