-- @export held
-- _chrome_gpu_row: every GPU op (kernel, gpu_memcpy, gpu_memset, graph_event_node,
-- graph_host_node; _gpu_op_row) in the reference exporter's processing order, with the lane
-- it is drawn on. The reference fills first-seen / last-wins dictionaries in that order, so
-- `pos` keeps it: kind rank, then the row's place in its file.
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
  NULLIF(lane, stream_id) AS lane,
  -- the lane's display name, when `lane` is set (plain text: 4 bytes a row where a NULL
  -- string view would take 16)
  arrow_cast(CASE WHEN lane <> stream_id THEN lane_name END, 'Utf8') AS lane_name
FROM _gpu_op_row
