-- @export chrome section=events order=12
-- chrome_gpu_user_annotation: GPU-side spans of named user regions (_gpu_annotation_span),
-- their edges padded by 1 ns each side.
CREATE OR REPLACE VIEW chrome_gpu_user_annotation AS
SELECT
  -- event phase and category
  'X' AS ph,
  'gpu_user_annotation' AS cat,
  -- the region's name
  s.name,
  -- device as process, capture stream as thread
  s.device_id AS pid,
  chrome_tid(s.stream_id) AS tid,
  -- span start minus 1 ns and duration plus 2 ns, µs (the reference's float arithmetic)
  greatest(CAST(s.start_ns - b.base_ns AS DOUBLE) / 1000.0 - 0.001, 0.0) AS ts,
  greatest(CAST(s.end_ns - s.start_ns AS DOUBLE) / 1000.0 + 0.002, 0.0) AS dur,
  -- the region's external id
  s.user_external_id AS "args.External id"
FROM _gpu_annotation_span s
CROSS JOIN chrome_base b
-- the reference's order (sorted span keys), the same from run to run
ORDER BY s.user_external_id, s.device_id, s.stream_id
