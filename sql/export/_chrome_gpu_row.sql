-- @export held
-- _chrome_gpu_row: every GPU op (kernel, gpu_memcpy, gpu_memset, graph_event_node,
-- graph_host_node) in the reference exporter's processing order, with the lane it is drawn
-- on. The reference fills first-seen / last-wins dictionaries in that order, so `pos` keeps
-- it: kind rank, then the row's place in its file (row order is part of the window format).
-- A graphed op whose resolver lane differs from its stream is moved onto the lane.
-- The rows are held for the whole export, so they carry nothing derivable: the kind is
-- pos >> 32 (kernel, gpu_memcpy and gpu_memset rows: pos < 3 * 2^32), the drawn stream is
-- COALESCE(lane, stream_id).
CREATE OR REPLACE VIEW _chrome_gpu_row AS
SELECT
  -- processing order: kind rank * 2^32 + 1-based row number in the kind's file
  -- (kind rank: 0 kernel, 1 gpu_memcpy, 2 gpu_memset, 3 graph_event_node, 4 graph_host_node)
  kind_rank * 4294967296 + ord AS pos,
  -- the row's own columns (unix ns, ids)
  start_ns,
  end_ns,
  device_id,
  context_id,
  stream_id,
  correlation_id,
  graph_node_id,
  -- the resolver lane the op is moved to; NULL when it stays on its stream
  CASE WHEN graph_node_id <> 0 AND logical_lane IS NOT NULL AND logical_lane <> stream_id
       THEN logical_lane END AS lane,
  -- the lane's display name, when `lane` is set (plain text: 4 bytes a row where a NULL
  -- string view would take 16)
  arrow_cast(CASE WHEN graph_node_id <> 0 AND logical_lane IS NOT NULL
                   AND logical_lane <> stream_id THEN lane_name END, 'Utf8') AS lane_name
FROM (
  SELECT 0 AS kind_rank, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord, start_ns, end_ns, device_id, context_id,
    stream_id, correlation_id, graph_node_id, logical_lane, lane_name
  FROM kernel
  UNION ALL
  SELECT 1, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name
  FROM gpu_memcpy
  UNION ALL
  SELECT 2, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name
  FROM gpu_memset
  UNION ALL
  SELECT 3, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name
  FROM graph_event_node
  UNION ALL
  SELECT 4, CAST(ROW_NUMBER() OVER () AS BIGINT), start_ns, end_ns, device_id, context_id, stream_id,
    correlation_id, graph_node_id, logical_lane, lane_name
  FROM graph_host_node
)
