-- @export chrome section=events order=7
-- chrome_graph_flow: each CUDA-graph dependency edge (_chrome_graph_edge) as a flow: `s` at
-- the predecessor's end, `f` at the successor's start, on their drawn lanes.
CREATE OR REPLACE VIEW chrome_graph_flow AS
SELECT
  -- flow start
  's' AS ph,
  -- the edge's flow id (from 1 << 40)
  e.id,
  -- predecessor's device and lane
  e.pred_device_id AS pid,
  chrome_tid(e.pred_stream) AS tid,
  -- predecessor's end, µs
  greatest(CAST(e.pred_end_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  -- flow category and name
  'ac2g' AS cat,
  'ac2g' AS name,
  -- only on the `f` end
  CAST(NULL AS VARCHAR) AS bp
FROM _chrome_graph_edge e
CROSS JOIN chrome_base b
UNION ALL
SELECT 'f', e.id, e.device_id, chrome_tid(e.display_stream),
  greatest(CAST(e.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0), 'ac2g', 'ac2g', 'e'
FROM _chrome_graph_edge e
CROSS JOIN chrome_base b
