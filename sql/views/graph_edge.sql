-- graph_edge: CUDA-graph dependency edges (graph_deps) resolved to the timed nodes of one
-- replay. Every node of a replay shares the launch's correlation id, so an edge joins a node
-- to its predecessor with the same correlation id and never crosses replays. Rows with
-- correlation id 0 (host nodes hit by the CUPTI bug in window-format.md) are left out: their
-- replay is unknown.
CREATE OR REPLACE VIEW graph_edge AS
SELECT
  {{part n}}
  -- the replay (graph launch) both nodes belong to
  n.correlation_id,
  -- predecessor node: tools id, kind, device, stream, end (unix ns)
  p.graph_node_id AS pred_node_id,
  p.kind AS pred_kind,
  p.device_id AS pred_device_id,
  p.stream_id AS pred_stream_id,
  p.ts + p.dur AS pred_end_ts,
  -- successor node: tools id, kind, device, stream, start (unix ns)
  n.graph_node_id AS node_id,
  n.kind,
  n.device_id,
  n.stream_id,
  n.ts,
  -- ordering of graph_deps (node position, predecessor position), which numbers flow ids
  d.node_ordinal,
  d.pred_ordinal
FROM graph_deps d
JOIN gpu_op n ON n.graph_node_id = d.node_id {{same_window n d}}
JOIN gpu_op p ON p.graph_node_id = d.pred_node_id
  AND p.correlation_id = n.correlation_id {{same_window p n}}
WHERE d.pred_node_id IS NOT NULL
  AND n.correlation_id <> 0
