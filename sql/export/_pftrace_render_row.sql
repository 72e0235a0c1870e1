-- _pftrace_render_row: every GPU render stage of the .pftrace export, in the reference's row
-- order (stage Kernel, Memcpy, Memset, Annotation, EventRecord, HostNode; file order within
-- a stage), numbered by that order as its event_id (0 stays "none"). Annotation rows are the
-- GPU user-annotation spans of chrome_gpu_user_annotation (same join), back in ns. A graphed
-- op whose resolver lane differs from its stream is drawn on the lane.
CREATE OR REPLACE VIEW _pftrace_render_row AS
SELECT
  -- 1-based render-stage event id
  CAST(ROW_NUMBER() OVER (ORDER BY r.stage_iid, r.ord) AS BIGINT) AS event_id,
  -- 1 Kernel, 2 Memcpy, 3 Memset, 4 Annotation, 5 EventRecord, 6 HostNode
  CAST(r.stage_iid AS INT) AS stage_iid,
  -- start (unix ns) and unclamped duration (ns, never negative)
  r.start_ns AS ts,
  greatest(r.end_ns - r.start_ns, 0) AS dur,
  -- the op's own columns (0 where its kind has none)
  r.device_id,
  r.context_id,
  r.stream_id,
  -- the lane it is drawn on: its resolver lane when moved, else its stream
  CASE WHEN r.graph_node_id <> 0 AND r.logical_lane IS NOT NULL AND r.logical_lane <> r.stream_id
       THEN r.logical_lane ELSE r.stream_id END AS lane,
  -- the resolver's lane name, only on moved ops
  CASE WHEN r.graph_node_id <> 0 AND r.logical_lane IS NOT NULL AND r.logical_lane <> r.stream_id
       THEN r.lane_name END AS lane_name,
  r.correlation_id,
  r.graph_node_id,
  r.graph_id,
  -- kernel or annotation name (NULL for the other stages)
  r.name,
  -- launch geometry and resources (kernels; 0 elsewhere). These and the INT extras below
  -- are 32-bit or narrower in CUPTI's records (queued is a timestamp, channel a u32): the
  -- rows are held for the whole export, so they are held as INT, not BIGINT.
  CAST(r.grid_x AS INT) AS grid_x, CAST(r.grid_y AS INT) AS grid_y,
  CAST(r.grid_z AS INT) AS grid_z, CAST(r.block_x AS INT) AS block_x,
  CAST(r.block_y AS INT) AS block_y, CAST(r.block_z AS INT) AS block_z,
  CAST(r.registers_per_thread AS INT) AS registers_per_thread,
  CAST(r.dynamic_shared_memory AS INT) AS dynamic_shared_memory,
  -- numeric extras (0 where the kind has no such column)
  CAST(r.priority AS INT) AS priority, r.queued,
  r.channel, CAST(r.channel_type AS INT) AS channel_type,
  r.bytes, r.value, CAST(r.memory_kind AS INT) AS memory_kind,
  -- spread into extra_data: graph annotation (JSON text), collective metadata, host callback
  r.annotation,
  r.metadata,
  r.host_fn,
  r.host_fn_addr
FROM (
  SELECT 1 AS stage_iid, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord, start_ns, end_ns,
    device_id, context_id, stream_id, correlation_id, graph_node_id, graph_id, logical_lane,
    lane_name, name, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread,
    dynamic_shared_memory, priority, queued, channel, channel_type, 0 AS bytes, 0 AS value,
    0 AS memory_kind, annotation, metadata, CAST(NULL AS VARCHAR) AS host_fn,
    CAST(NULL AS BIGINT) AS host_fn_addr
  FROM kernel
  UNION ALL
  SELECT 2, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, graph_id, logical_lane, lane_name, NULL,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, channel, channel_type, bytes, 0, 0, annotation, metadata,
    NULL, NULL
  FROM gpu_memcpy
  UNION ALL
  SELECT 3, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, graph_id, logical_lane, lane_name, NULL,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, channel, channel_type, bytes, value, memory_kind,
    annotation, metadata, NULL, NULL
  FROM gpu_memset
  UNION ALL
  SELECT 4, CAST(ROW_NUMBER() OVER (ORDER BY a."args.External id", a.pid, a.tid) AS BIGINT),
    b.base_ns + CAST(round(a.ts * 1000.0) AS BIGINT),
    b.base_ns + CAST(round(a.ts * 1000.0) AS BIGINT) + greatest(CAST(round(a.dur * 1000.0) AS BIGINT), 0),
    a.pid, 0, a.tid, 0, 0, 0, NULL, NULL, a.name,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL
  FROM chrome_gpu_user_annotation a
  CROSS JOIN chrome_base b
  UNION ALL
  SELECT 5, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, graph_id, logical_lane, lane_name, NULL,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, annotation, NULL, NULL, NULL
  FROM graph_event_node
  UNION ALL
  SELECT 6, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, graph_id, logical_lane, lane_name, NULL,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, annotation, NULL, host_fn, host_fn_addr
  FROM graph_host_node
) r
