-- @export chrome section=events order=6
-- chrome_host_node: one Chrome `X` event per CUDA-graph host node (a CPU callback run as a
-- graph node), drawn on its stream lane, named "HostNode: <fn>" when the callback is known.
CREATE OR REPLACE VIEW chrome_host_node AS
SELECT
  -- event phase, category
  'X' AS ph,
  'graph_host_node' AS cat,
  -- "HostNode", or "HostNode: <fn>"
  CASE WHEN h.host_fn IS NULL OR h.host_fn = '' THEN 'HostNode'
       ELSE concat('HostNode: ', h.host_fn) END AS name,
  -- device as process, drawn stream as thread
  h.device_id AS pid,
  chrome_tid(drawn_lane(h.graph_node_id, h.logical_lane, h.stream_id)) AS tid,
  -- start and duration, µs
  greatest(CAST(h.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(h.end_ns - h.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- ids
  h.device_id AS "args.device",
  h.context_id AS "args.context",
  drawn_lane(h.graph_node_id, h.logical_lane, h.stream_id) AS "args.stream",
  h.correlation_id AS "args.correlation",
  -- the host process and thread that ran the callback
  h.process_id AS "args.host process",
  h.thread_id AS "args.host thread",
  -- graph id / lower 32 bits of the node id, when graphed
  CASE WHEN h.graph_id <> 0 THEN h.graph_id END AS "args.graph id",
  CASE WHEN h.graph_node_id <> 0 THEN h.graph_node_id & 4294967295 END AS "args.graph node id",
  -- annotation spread into args
  h.annotation AS "args.*annotation",
  -- callback name and address (hex), when known
  CASE WHEN h.host_fn <> '' THEN h.host_fn END AS "args.host fn",
  CASE WHEN h.host_fn_addr > 0 THEN chrome_hex(CAST(h.host_fn_addr AS BIGINT UNSIGNED))
       WHEN h.host_fn_addr < 0 THEN concat('-', chrome_hex(CAST(-h.host_fn_addr AS BIGINT UNSIGNED)))
  END AS "args.host fn addr",
  -- the CUDA stream of a moved op
  NULLIF(h.stream_id, drawn_lane(h.graph_node_id, h.logical_lane, h.stream_id)) AS "args.original_stream"
FROM graph_host_node h
CROSS JOIN chrome_base b
