-- nsys_gpu_memcpy: CUPTI_ACTIVITY_KIND_MEMCPY as `gpu_memcpy` rows, every process together.
-- The copy and memory kinds go through the report's ENUM_CUDA_MEMCPY_OPER and
-- ENUM_CUDA_MEM_KIND (nsys's memory-kind numbering is not CUPTI's); a report without those
-- tables keeps the codes as written. nsys does not record flags, channel or channel type.
CREATE OR REPLACE VIEW nsys_gpu_memcpy AS
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
  -- bytes copied
  m.bytes,
  -- CUPTI copy kind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...)
  CASE WHEN s.has_copy_enum THEN COALESCE(ck.code, 0) ELSE m.copyKind END AS copy_kind,
  -- CUPTI memory kinds of the source and destination (1 pageable, 2 pinned, 3 device, ...)
  CASE WHEN s.has_mem_enum THEN COALESCE(sk.code, 0) ELSE m.srcKind END AS src_kind,
  CASE WHEN s.has_mem_enum THEN COALESCE(dk.code, 0) ELSE m.dstKind END AS dst_kind,
  -- source and destination device of the copy
  m.srcDeviceId AS src_device_id,
  m.dstDeviceId AS dst_device_id
FROM CUPTI_ACTIVITY_KIND_MEMCPY m
CROSS JOIN nsys_session s
LEFT JOIN _nsys_enum ck ON ck.enum = 'copy' AND ck.id = m.copyKind
LEFT JOIN _nsys_enum sk ON sk.enum = 'mem' AND sk.id = m.srcKind
LEFT JOIN _nsys_enum dk ON dk.enum = 'mem' AND dk.id = m.dstKind
