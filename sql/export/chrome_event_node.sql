-- @export chrome section=events order=5
-- chrome_event_node: one Chrome `X` event per CUDA-graph event-record node, named
-- "EventRecord", tagged with the cudaEvent handle the node records (graph_event_record,
-- last row per node wins) so dependency arrows show what waits on it.
CREATE OR REPLACE VIEW chrome_event_node AS
SELECT
  -- event phase, category, name
  'X' AS ph,
  'graph_event_node' AS cat,
  'EventRecord' AS name,
  -- device as process, drawn stream as thread
  g.device_id AS pid,
  chrome_tid(drawn_lane(g.graph_node_id, g.logical_lane, g.stream_id)) AS tid,
  -- start and duration, µs
  greatest(CAST(g.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(g.end_ns - g.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- ids
  g.device_id AS "args.device",
  g.context_id AS "args.context",
  drawn_lane(g.graph_node_id, g.logical_lane, g.stream_id) AS "args.stream",
  g.correlation_id AS "args.correlation",
  -- graph id / lower 32 bits of the node id, when graphed
  CASE WHEN g.graph_id <> 0 THEN g.graph_id END AS "args.graph id",
  CASE WHEN g.graph_node_id <> 0 THEN g.graph_node_id & 4294967295 END AS "args.graph node id",
  -- annotation spread into args
  g.annotation AS "args.*annotation",
  -- the recorded cudaEvent handle, hex
  chrome_hex(r.cuda_event) AS "args.cuda event",
  -- the CUDA stream of a moved op
  NULLIF(g.stream_id, drawn_lane(g.graph_node_id, g.logical_lane, g.stream_id)) AS "args.original_stream"
FROM graph_event_node g
CROSS JOIN chrome_base b
LEFT JOIN (
  SELECT graph_node_id, last_value(cuda_event ORDER BY file_row) AS cuda_event
  FROM graph_event_record
  GROUP BY graph_node_id
) r ON r.graph_node_id = g.graph_node_id
