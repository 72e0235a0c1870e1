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
  -- padded start and duration, µs
  s.ts_us AS ts,
  s.dur_us AS dur,
  -- the region's external id
  s.user_external_id AS "args.External id"
FROM _gpu_annotation_span s
-- the reference's order (sorted span keys), the same from run to run
ORDER BY s.user_external_id, s.device_id, s.stream_id
