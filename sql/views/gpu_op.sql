-- gpu_op: everything that ran on a GPU (kernels, memcpys, memsets, CUDA-graph event-record
-- and host nodes) in one shape, named as the reference exporter names them (Memcpy, Memset,
-- EventRecord, HostNode[: fn]). `ts`/`dur` in ns.
CREATE OR REPLACE VIEW gpu_op AS
SELECT
  {{part}}
  -- in the export's catalog: the row's 1-based place in its table's file
  {{file_row}}
  -- source table: kernel, gpu_memcpy, gpu_memset, graph_event_node or graph_host_node
  'kernel' AS kind,
  -- display name
  name,
  -- start, unix ns
  start_ns AS ts,
  -- duration, ns
  end_ns - start_ns AS dur,
  -- device ordinal
  device_id,
  -- CUDA context
  context_id,
  -- CUDA stream the op ran on (capture/replay stream for graphs)
  stream_id,
  -- the launching API call's correlation id (shared by every node of one graph replay)
  correlation_id,
  -- graph id, 0 when launched eagerly
  graph_id,
  -- graph node tools id (exec graph id << 32 | node id), 0 when eager
  graph_node_id,
  -- graph-region annotation as JSON text
  annotation,
  -- the display lane the producer recorded, and its label (window-format.md; NULL when
  -- not recorded); the exports draw a graphed op there
  logical_lane,
  lane_name
FROM kernel
UNION ALL
SELECT {{part}} {{file_row}} 'gpu_memcpy', 'Memcpy', start_ns, end_ns - start_ns, device_id,
  context_id, stream_id, correlation_id, graph_id, graph_node_id, annotation, logical_lane,
  lane_name
FROM gpu_memcpy
UNION ALL
SELECT {{part}} {{file_row}} 'gpu_memset', 'Memset', start_ns, end_ns - start_ns, device_id,
  context_id, stream_id, correlation_id, graph_id, graph_node_id, annotation, logical_lane,
  lane_name
FROM gpu_memset
UNION ALL
SELECT {{part}} {{file_row}} 'graph_event_node', 'EventRecord', start_ns, end_ns - start_ns,
  device_id, context_id, stream_id, correlation_id, graph_id, graph_node_id, annotation,
  logical_lane, lane_name
FROM graph_event_node
UNION ALL
SELECT {{part}} {{file_row}} 'graph_host_node',
  CASE WHEN host_fn IS NULL OR host_fn = '' THEN 'HostNode' ELSE concat('HostNode: ', host_fn) END,
  start_ns, end_ns - start_ns, device_id, context_id, stream_id, correlation_id, graph_id,
  graph_node_id, annotation, logical_lane, lane_name
FROM graph_host_node
