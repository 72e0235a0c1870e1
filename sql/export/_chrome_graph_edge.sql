-- @export held
-- _chrome_graph_edge: CUDA-graph dependency edges as the reference draws them, numbered as
-- it numbers them. Edges (graph_deps, in predecessor order) join a node (_chrome_graph_node)
-- to a predecessor of the same replay; flow ids count from 1 << 40 over replays in first-seen order, nodes in
-- first-seen order, then predecessors.
CREATE OR REPLACE VIEW _chrome_graph_edge AS
SELECT
  -- flow id of the edge
  1099511627775
    + CAST(ROW_NUMBER() OVER (ORDER BY r.first_pos, n.first_pos, d.pred_ordinal) AS BIGINT) AS id,
  -- predecessor: device, drawn stream, end (unix ns)
  p.device_id AS pred_device_id,
  p.display_stream AS pred_stream,
  p.end_ns AS pred_end_ns,
  -- successor: device, drawn stream, start (unix ns)
  n.device_id,
  n.display_stream,
  n.start_ns
FROM _chrome_graph_node n
JOIN (
  SELECT correlation_id, min(first_pos) AS first_pos
  FROM _chrome_graph_node
  GROUP BY correlation_id
) r ON r.correlation_id = n.correlation_id
JOIN graph_deps d ON d.node_id = n.graph_node_id AND d.pred_node_id IS NOT NULL
JOIN _chrome_graph_node p
  ON p.correlation_id = n.correlation_id AND p.graph_node_id = d.pred_node_id
