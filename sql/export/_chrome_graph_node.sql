-- _chrome_graph_node: each CUDA-graph node of each replay as the reference keeps it: graphed
-- ops (graph_node_id <> 0) grouped by replay (correlation id, 0 included) and node id; a
-- node keeps the place of its first row and the values of its last.
CREATE OR REPLACE VIEW _chrome_graph_node AS
SELECT
  -- the replay (the graph launch's correlation id)
  correlation_id,
  graph_node_id,
  -- processing order of the node's first row (_chrome_gpu_row.pos)
  min(pos) AS first_pos,
  -- the last row's device, drawn stream, start and end (unix ns)
  last_value(device_id ORDER BY pos) AS device_id,
  last_value(display_stream ORDER BY pos) AS display_stream,
  last_value(start_ns ORDER BY pos) AS start_ns,
  last_value(end_ns ORDER BY pos) AS end_ns
FROM _chrome_gpu_row
WHERE graph_node_id <> 0
GROUP BY correlation_id, graph_node_id
