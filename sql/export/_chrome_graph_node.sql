-- @export held
-- _chrome_graph_node: each CUDA-graph node of each replay as the reference keeps it: graphed
-- ops (graph_node_id <> 0) grouped by replay (correlation id, 0 included) and node id; a
-- node keeps the place of its first row and the values of its last.
-- (The last row is found by its place, `pos`, which is unique: ordered aggregates such as
-- last_value(... ORDER BY pos) keep a per-group accumulator of scalars, far slower.)
CREATE OR REPLACE VIEW _chrome_graph_node AS
SELECT
  -- the replay (the graph launch's correlation id)
  g.correlation_id,
  g.graph_node_id,
  -- processing order of the node's first row (_chrome_gpu_row.pos)
  g.first_pos,
  -- the last row's device, drawn stream, start and end (unix ns)
  r.device_id,
  COALESCE(r.lane, r.stream_id) AS display_stream,
  r.start_ns,
  r.end_ns
FROM (
  SELECT correlation_id, graph_node_id, min(pos) AS first_pos, max(pos) AS last_pos
  FROM _chrome_gpu_row
  WHERE graph_node_id <> 0
  GROUP BY correlation_id, graph_node_id
) g
JOIN _chrome_gpu_row r ON r.pos = g.last_pos
