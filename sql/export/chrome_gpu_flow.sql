-- @export chrome section=events order=2
-- chrome_gpu_flow: the terminating `f` end of each GPU op's launch flow (id = correlation
-- id, 0 = none), on the op's drawn lane. When graph_deps exists, a graphed op listed there
-- (a node with predecessors) gets its incoming arrow from the dependency flows instead, so
-- only root nodes and eager ops keep the launch flow.
CREATE OR REPLACE VIEW chrome_gpu_flow AS
SELECT
  -- flow end
  'f' AS ph,
  -- the launch's correlation id
  g.correlation_id AS id,
  -- device as process, drawn stream as thread
  g.device_id AS pid,
  chrome_tid(COALESCE(g.lane, g.stream_id)) AS tid,
  -- the op's start, µs
  greatest(CAST(g.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  -- flow category and name
  'ac2g' AS cat,
  'ac2g' AS name,
  -- binds to the enclosing slice
  'e' AS bp
FROM _chrome_gpu_row g
CROSS JOIN chrome_base b
WHERE g.correlation_id <> 0
  AND NOT EXISTS (SELECT 1 FROM graph_deps d WHERE d.node_id = g.graph_node_id)
