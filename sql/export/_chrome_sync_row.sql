-- @export held
-- _chrome_sync_row: cuda_sync records with what the reference adds: the device of their
-- context (the first kernel, gpu_memcpy, gpu_memset or cuda_event row of that context, in
-- that order; 0 when none), the stream with CUPTI's 0xFFFFFFFF "none" read as -1, and for
-- Event Sync / Stream Wait Event the correlation id of the cudaEventRecord that recorded the
-- awaited event (cuda_event, last row per cuda_event_sync_id wins; -1 when unknown).
CREATE OR REPLACE VIEW _chrome_sync_row AS
SELECT
  -- processing order (file order)
  s.ord,
  s.sync_type,
  -- Kineto's name of the sync type, `sync_<n>` when unknown
  CASE s.sync_type WHEN 0 THEN 'Unknown' WHEN 1 THEN 'Event Sync'
    WHEN 2 THEN 'Stream Wait Event' WHEN 3 THEN 'Stream Sync' WHEN 4 THEN 'Context Sync'
    ELSE concat('sync_', CAST(s.sync_type AS VARCHAR)) END AS kind_name,
  s.start_ns,
  s.end_ns,
  s.context_id,
  s.correlation_id,
  s.cuda_event_id,
  -- device of the context
  COALESCE(d.device_id, 0) AS device_id,
  -- stream, -1 for "none"
  CASE WHEN s.stream_id = 4294967295 THEN -1 ELSE s.stream_id END AS stream,
  -- correlation id of the awaited event's record call, -1 when unknown
  COALESCE(e.correlation_id, -1) AS record_correlation_id
FROM (SELECT *, file_row AS ord FROM cuda_sync) s
LEFT JOIN (
  SELECT context_id, first_value(device_id ORDER BY pos) AS device_id
  FROM (
    -- kernel, gpu_memcpy and gpu_memset rows
    SELECT context_id, device_id, pos FROM _chrome_gpu_row WHERE pos < 3 * 4294967296
    UNION ALL
    SELECT context_id, device_id, 3 * 4294967296 + file_row FROM cuda_event
  )
  GROUP BY context_id
) d ON d.context_id = s.context_id
LEFT JOIN (
  SELECT cuda_event_sync_id, last_value(correlation_id ORDER BY file_row) AS correlation_id
  FROM cuda_event
  WHERE cuda_event_sync_id <> 0
  GROUP BY cuda_event_sync_id
) e ON e.cuda_event_sync_id = s.cuda_event_sync_id
