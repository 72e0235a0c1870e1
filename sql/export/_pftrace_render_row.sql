-- @export pftrace held sorted=event_id sorted=stage_iid,ord
-- _pftrace_render_row: every GPU render stage of the .pftrace export, in the reference's row
-- order (stage Kernel, Memcpy, Memset, Annotation, EventRecord, HostNode; file order within
-- a stage), numbered by that order as its event_id (0 stays "none"). Annotation rows are the
-- GPU user-annotation spans (_gpu_annotation_span). A graphed op whose resolver lane differs
-- from its stream is drawn on the lane.
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
  r.lane,
  -- the resolver's lane name, only on moved ops
  CASE WHEN r.lane <> r.stream_id THEN r.lane_name END AS lane_name,
  r.correlation_id,
  r.graph_node_id,
  -- kernel or annotation name (NULL for the other stages)
  r.name
FROM (
  -- stages 1-3 and 5-6: the GPU ops of kind rank 0-2 and 3-4
  SELECT CASE WHEN kind_rank < 3 THEN kind_rank + 1 ELSE kind_rank + 2 END AS stage_iid, ord,
    start_ns, end_ns, device_id, stream_id, lane, lane_name, correlation_id, graph_node_id, name
  FROM _gpu_op_row
  UNION ALL
  -- stage 4: the GPU annotation spans, their Chrome µs rounded back to ns as the reference
  -- does (numpy's round, ties to even): a float slip of the reference is kept, not fixed
  SELECT 4, CAST(ROW_NUMBER() OVER (ORDER BY a.user_external_id, a.device_id, chrome_tid(a.stream_id)) AS BIGINT),
    b.base_ns + ns_of_us(a.ts_us),
    b.base_ns + ns_of_us(a.ts_us) + greatest(ns_of_us(a.dur_us), 0),
    a.device_id, chrome_tid(a.stream_id), chrome_tid(a.stream_id) AS lane, NULL, 0, 0, a.name
  FROM _gpu_annotation_span a
  CROSS JOIN chrome_base b
) r
