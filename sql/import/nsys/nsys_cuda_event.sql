-- nsys_cuda_event: CUPTI_ACTIVITY_KIND_CUDA_EVENT (event records) as `cuda_event` rows,
-- every process together. nsys has no sync id, so `cuda_event_sync_id` is 0 (none).
CREATE OR REPLACE VIEW nsys_cuda_event AS
SELECT
  -- the process key the window is cut by (not written)
  (e.globalPid >> 24) << 24 AS _global_pid,
  -- no sync id in nsys reports
  0 AS cuda_event_sync_id,
  -- the cudaEventRecord call
  e.correlationId AS correlation_id,
  -- device, context, stream
  e.deviceId AS device_id,
  e.contextId AS context_id,
  e.streamId AS stream_id,
  -- CUPTI's id of the event object
  e.eventId AS event_id,
  -- device-side record time, unix ns; 0 = not recorded
  CASE WHEN e.start IS NULL THEN 0 ELSE e.start + s.epoch_ns END AS start_ns,
  CASE WHEN e."end" IS NULL THEN 0 ELSE e."end" + s.epoch_ns END AS end_ns
FROM CUPTI_ACTIVITY_KIND_CUDA_EVENT e
CROSS JOIN nsys_session s
