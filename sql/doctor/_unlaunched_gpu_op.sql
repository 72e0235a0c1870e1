-- _unlaunched_gpu_op: the GPU ops (gpu_op) whose correlation id names no API call of their
-- window (api_call), correlation id 0 included. The helper of gpu_op_without_launch (eager ops)
-- and graph_op_without_launch (CUDA-graph nodes), which weigh such ops differently.
CREATE OR REPLACE VIEW _unlaunched_gpu_op AS
SELECT
  {{part g}}
  -- see gpu_op
  g.kind, g.name, g.ts, g.dur, g.device_id, g.stream_id, g.correlation_id, g.graph_id,
  g.graph_node_id
FROM gpu_op g
LEFT JOIN api_call a ON a.correlation_id = g.correlation_id AND g.correlation_id <> 0
  {{same_window a g}}
WHERE a.correlation_id IS NULL
