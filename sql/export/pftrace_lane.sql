-- @export pftrace
-- pftrace_lane: the hardware-queue lanes of the render stages (one gpu_specifications entry
-- each): every distinct lane number in ascending order, iid 100 + its rank, with the name the
-- resolver gave it (the last moved op's non-NULL lane_name for that lane number, whatever
-- its GPU, as the reference keys it), else NULL for "stream <n>".
CREATE OR REPLACE VIEW pftrace_lane AS
SELECT
  -- gpu_specifications iid
  99 + CAST(ROW_NUMBER() OVER (ORDER BY l.lane) AS BIGINT) AS iid,
  -- lane number (stream or resolver lane)
  l.lane,
  -- resolver's name, NULL when none
  n.lane_name
FROM (SELECT DISTINCT lane FROM _pftrace_render_row) l
LEFT JOIN (
  SELECT lane, last_value(lane_name ORDER BY event_id) AS lane_name
  FROM _pftrace_render_row
  WHERE lane_name IS NOT NULL
  GROUP BY lane
) n ON n.lane = l.lane
