-- nsys_kernel: CUPTI_ACTIVITY_KIND_KERNEL as the window's `kernel` rows, every process
-- together (`_global_pid` says whose; the importer cuts one window per process). The name is
-- the demangled one from StringIds, else the short one. Columns nsys does not record
-- (priority, queued, channel, channel_type) are left NULL.
CREATE OR REPLACE VIEW nsys_kernel AS
SELECT
  -- the process key the window is cut by (not written)
  (k.globalPid >> 24) << 24 AS _global_pid,
  -- start and end, unix ns
  k.start + s.epoch_ns AS start_ns,
  k."end" + s.epoch_ns AS end_ns,
  -- device, context and stream as CUPTI gave them to nsys
  k.deviceId AS device_id,
  k.contextId AS context_id,
  k.streamId AS stream_id,
  -- the launching API call; unique within one process only
  k.correlationId AS correlation_id,
  -- CUPTI's graph node id; 0 = eager (nsys writes NULL)
  COALESCE(k.graphNodeId, 0) AS graph_node_id,
  -- graph id: nsys's graphId where the schema has it, else the node id's high 32 bits
  COALESCE(k.graphId, k.graphNodeId >> 32, 0) AS graph_id,
  -- demangled kernel name, else the short name, else ''
  COALESCE(d.value, n.value, '') AS name,
  -- grid and block dimensions
  k.gridX AS grid_x,
  k.gridY AS grid_y,
  k.gridZ AS grid_z,
  k.blockX AS block_x,
  k.blockY AS block_y,
  k.blockZ AS block_z,
  -- registers per thread
  k.registersPerThread AS registers_per_thread,
  -- static and dynamic shared memory, bytes
  k.staticSharedMemory AS static_shared_memory,
  k.dynamicSharedMemory AS dynamic_shared_memory
FROM CUPTI_ACTIVITY_KIND_KERNEL k
CROSS JOIN nsys_session s
LEFT JOIN StringIds d ON d.id = k.demangledName
LEFT JOIN StringIds n ON n.id = k.shortName
