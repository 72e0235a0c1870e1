-- nsys_cuda_sync: CUPTI_ACTIVITY_KIND_SYNCHRONIZATION as `cuda_sync` rows, every process
-- together. The sync type goes through ENUM_CUPTI_SYNC_TYPE where the report has it. nsys
-- records the event waited on but no record id, so `cuda_event_sync_id` is 0 (none).
CREATE OR REPLACE VIEW nsys_cuda_sync AS
SELECT
  -- the process key the window is cut by (not written)
  (y.globalPid >> 24) << 24 AS _global_pid,
  -- CUPTI sync type: 1 event, 2 stream wait event, 3 stream, 4 context
  CASE WHEN s.has_sync_enum THEN COALESCE(k.code, 0) ELSE y.syncType END AS sync_type,
  -- start and end, unix ns
  y.start + s.epoch_ns AS start_ns,
  y."end" + s.epoch_ns AS end_ns,
  -- context (the device is found through it)
  y.contextId AS context_id,
  -- stream; 0xFFFFFFFF = not applicable (also for NULL or negative values)
  CASE WHEN y.streamId IS NULL OR y.streamId < 0 THEN 4294967295 ELSE y.streamId END AS stream_id,
  -- the synchronizing API call
  y.correlationId AS correlation_id,
  -- the event waited on; 0xFFFFFFFF = none
  CASE WHEN y.eventId IS NULL OR y.eventId < 0 THEN 4294967295 ELSE y.eventId END AS cuda_event_id,
  -- no link to an event record: nsys has no sync id
  0 AS cuda_event_sync_id
FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y
CROSS JOIN nsys_session s
LEFT JOIN _nsys_enum k ON k.enum = 'sync' AND k.id = y.syncType
