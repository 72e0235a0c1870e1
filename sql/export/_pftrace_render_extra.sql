-- @export pftrace
-- _pftrace_render_extra: the render stages' columns that are only written out, never joined
-- on, read from the window's tables again at write time rather than held with
-- _pftrace_render_row: launch geometry and resources, the numeric extras, the spread
-- sources. One row per render stage, keyed by (stage_iid, ord) as in _pftrace_render_row,
-- each stage in file order (annotations have none of these: zeros, from the held rows);
-- its start `ts` checks that the second read met the rows in the same order.
CREATE OR REPLACE VIEW _pftrace_render_extra AS
SELECT 1 AS stage_iid, file_row AS ord, start_ns AS ts,
  context_id,
  graph_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread,
  dynamic_shared_memory, priority, queued, channel, channel_type, 0 AS bytes, 0 AS value,
  0 AS memory_kind, annotation, metadata, CAST(NULL AS VARCHAR) AS host_fn,
  CAST(NULL AS BIGINT) AS host_fn_addr
FROM kernel
UNION ALL
SELECT 2, file_row, start_ns, context_id, graph_id,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, channel, channel_type, bytes, 0, 0, annotation, metadata,
  NULL, NULL
FROM gpu_memcpy
UNION ALL
SELECT 3, file_row, start_ns, context_id, graph_id,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, channel, channel_type, bytes, value, memory_kind,
  annotation, metadata, NULL, NULL
FROM gpu_memset
UNION ALL
SELECT 4, ord, ts, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL
FROM _pftrace_render_row
WHERE stage_iid = 4
UNION ALL
SELECT 5, file_row, start_ns, context_id, graph_id,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, annotation, NULL, NULL, NULL
FROM graph_event_node
UNION ALL
SELECT 6, file_row, start_ns, context_id, graph_id,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, annotation, NULL, host_fn, host_fn_addr
FROM graph_host_node
