-- _gpu_op_row: every GPU op (kernel, gpu_memcpy, gpu_memset, graph_event_node,
-- graph_host_node) as both exports read it: its kind's rank, its place in its file (row
-- order is part of the window format, and the reference processes rows in that order), its
-- times in unix ns, and the lane it is drawn on.
CREATE OR REPLACE VIEW _gpu_op_row AS
SELECT
  -- 0 kernel, 1 gpu_memcpy, 2 gpu_memset, 3 graph_event_node, 4 graph_host_node
  kind_rank,
  -- 1-based row number in the kind's file
  ord,
  -- start and end, unix ns
  start_ns,
  end_ns,
  device_id,
  context_id,
  stream_id,
  correlation_id,
  graph_node_id,
  -- the lane it is drawn on (its stream unless moved to a resolver lane)
  drawn_lane(graph_node_id, logical_lane, stream_id) AS lane,
  -- the resolver lane's display name, as recorded
  lane_name,
  -- kernel name (NULL for the other kinds)
  name
FROM (
  SELECT 0 AS kind_rank, file_row AS ord, start_ns, end_ns,
    device_id, context_id, stream_id, correlation_id, graph_node_id, logical_lane, lane_name,
    name
  FROM kernel
  UNION ALL
  SELECT 1, file_row, start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM gpu_memcpy
  UNION ALL
  SELECT 2, file_row, start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM gpu_memset
  UNION ALL
  SELECT 3, file_row, start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM graph_event_node
  UNION ALL
  SELECT 4, file_row, start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, logical_lane, lane_name, NULL
  FROM graph_host_node
)
