-- @check graph_op_without_launch severity=info: CUDA-graph nodes with no cudaGraphLaunch call, so their replay is unknown
-- Every node of a replay shares the launch's correlation id. CUPTI reports correlation id 0
-- for host nodes (and for a replay queued behind an in-flight one), a known CUPTI bug
-- (window-format.md), so these rows are expected in windows with graphs and only informative;
-- graph_edge and the exporters leave them out of their replay.
CREATE OR REPLACE VIEW graph_op_without_launch AS
SELECT
  {{part}}
  -- see gpu_op
  ts, kind, name, dur, device_id, stream_id, correlation_id, graph_id, graph_node_id
FROM _unlaunched_gpu_op
WHERE graph_id <> 0
