-- @export pftrace held sorted=event_id sorted=stage_iid,ord
-- _pftrace_render_row: every GPU render stage of the .pftrace export, in the reference's row
-- order (stage Kernel, Memcpy, Memset, Annotation, EventRecord, HostNode; file order within
-- a stage), numbered by that order as its event_id (0 stays "none"). Annotation rows are the
-- GPU user-annotation spans of chrome_gpu_user_annotation (same join), back in ns. A graphed
-- op whose resolver lane differs from its stream is drawn on the lane.
-- The export holds these rows for all its plans, so they are narrow: what the plans join,
-- number, clamp and intern on. The columns only written out (launch geometry, extras, spread
-- sources) come from _pftrace_render_extra, matched by (stage_iid, ord) at write time.
CREATE OR REPLACE VIEW _pftrace_render_row AS
SELECT
  -- 1-based render-stage event id
  CAST(ROW_NUMBER() OVER (ORDER BY r.stage_iid, r.ord) AS BIGINT) AS event_id,
  -- 1 Kernel, 2 Memcpy, 3 Memset, 4 Annotation, 5 EventRecord, 6 HostNode
  r.stage_iid,
  -- 1-based place within the stage (file order; the span order for annotations)
  r.ord,
  -- start (unix ns) and unclamped duration (ns, never negative)
  r.start_ns AS ts,
  greatest(r.end_ns - r.start_ns, 0) AS dur,
  r.device_id,
  r.stream_id,
  -- the lane it is drawn on: its resolver lane when moved, else its stream
  CASE WHEN r.graph_node_id <> 0 AND r.logical_lane IS NOT NULL AND r.logical_lane <> r.stream_id
       THEN r.logical_lane ELSE r.stream_id END AS lane,
  -- the resolver's lane name, only on moved ops
  CASE WHEN r.graph_node_id <> 0 AND r.logical_lane IS NOT NULL AND r.logical_lane <> r.stream_id
       THEN r.lane_name END AS lane_name,
  r.correlation_id,
  r.graph_node_id,
  -- kernel or annotation name (NULL for the other stages)
  r.name
FROM (
  SELECT 1 AS stage_iid, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord, start_ns, end_ns,
    device_id, stream_id, correlation_id, graph_node_id, logical_lane, lane_name, name
  FROM kernel
  UNION ALL
  SELECT 2, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM gpu_memcpy
  UNION ALL
  SELECT 3, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM gpu_memset
  UNION ALL
  SELECT 4, CAST(ROW_NUMBER() OVER (ORDER BY a."args.External id", a.pid, a.tid) AS BIGINT),
    b.base_ns + CAST(round(a.ts * 1000.0) AS BIGINT),
    b.base_ns + CAST(round(a.ts * 1000.0) AS BIGINT) + greatest(CAST(round(a.dur * 1000.0) AS BIGINT), 0),
    a.pid, a.tid, 0, 0, NULL, NULL, a.name
  FROM chrome_gpu_user_annotation a
  CROSS JOIN chrome_base b
  UNION ALL
  SELECT 5, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM graph_event_node
  UNION ALL
  SELECT 6, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM graph_host_node
) r
