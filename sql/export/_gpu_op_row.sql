-- _gpu_op_row: every GPU op (gpu_op: kernel, gpu_memcpy, gpu_memset, graph_event_node,
-- graph_host_node) as both exports read it: its kind's rank, its place in its file (row
-- order is part of the window format, and the reference processes rows in that order), its
-- times in unix ns, and the lane it is drawn on.
CREATE OR REPLACE VIEW _gpu_op_row AS
SELECT
  -- 0 kernel, 1 gpu_memcpy, 2 gpu_memset, 3 graph_event_node, 4 graph_host_node
  CASE kind WHEN 'kernel' THEN 0 WHEN 'gpu_memcpy' THEN 1 WHEN 'gpu_memset' THEN 2
            WHEN 'graph_event_node' THEN 3 ELSE 4 END AS kind_rank,
  -- 1-based row number in the kind's file
  file_row AS ord,
  -- start and end, unix ns
  ts AS start_ns,
  ts + dur AS end_ns,
  device_id,
  context_id,
  stream_id,
  correlation_id,
  graph_node_id,
  -- the lane it is drawn on (its stream unless moved to a resolver lane)
  drawn_lane(graph_node_id, logical_lane, stream_id) AS lane,
  -- the resolver lane's display name, as recorded
  lane_name,
  -- kernel name (NULL for the other kinds, which the exports name themselves)
  CASE WHEN kind = 'kernel' THEN name END AS name
FROM gpu_op
