-- nsys_gpu_memset: CUPTI_ACTIVITY_KIND_MEMSET as `gpu_memset` rows, every process together;
-- the memory kind goes through ENUM_CUDA_MEM_KIND as for copies.
CREATE OR REPLACE VIEW nsys_gpu_memset AS
SELECT
  -- the process key the window is cut by (not written)
  (m.globalPid >> 24) << 24 AS _global_pid,
  -- start and end, unix ns
  m.start + s.epoch_ns AS start_ns,
  m."end" + s.epoch_ns AS end_ns,
  -- device, context, stream
  m.deviceId AS device_id,
  m.contextId AS context_id,
  m.streamId AS stream_id,
  -- the launching API call
  m.correlationId AS correlation_id,
  -- CUPTI's graph node id; 0 = eager
  COALESCE(m.graphNodeId, 0) AS graph_node_id,
  -- graph id (graphId, else the node id's high 32 bits)
  COALESCE(m.graphId, m.graphNodeId >> 32, 0) AS graph_id,
  -- bytes set
  m.bytes,
  -- fill value
  m.value,
  -- CUPTI memory kind
  CASE WHEN s.has_mem_enum THEN COALESCE(k.code, 0) ELSE m.memKind END AS memory_kind
FROM CUPTI_ACTIVITY_KIND_MEMSET m
CROSS JOIN nsys_session s
LEFT JOIN _nsys_enum k ON k.enum = 'mem' AND k.id = m.memKind
