-- @export chrome section=events order=11
-- chrome_cuda_sync: one Chrome `X` event per cuda_sync record (_chrome_sync_row) on its
-- device and stream (stream -1 for "none"); Event Sync and Stream Wait Event carry the
-- awaited event and its record call's correlation id.
CREATE OR REPLACE VIEW chrome_cuda_sync AS
SELECT
  -- event phase and category; name is the sync kind
  'X' AS ph,
  'cuda_sync' AS cat,
  s.kind_name AS name,
  -- device as process, stream as thread
  s.device_id AS pid,
  chrome_tid(s.stream) AS tid,
  -- start and duration, µs
  greatest(CAST(s.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(s.end_ns - s.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- sync kind, stream, ids
  s.kind_name AS "args.cuda_sync_kind",
  s.stream AS "args.stream",
  s.correlation_id AS "args.correlation",
  s.device_id AS "args.device",
  s.context_id AS "args.context",
  -- what an event wait waits on (sync types 1 and 2 only)
  CASE WHEN s.sync_type IN (1, 2) THEN -1 END AS "args.wait_on_stream",
  CASE WHEN s.sync_type IN (1, 2) THEN s.cuda_event_id END AS "args.wait_on_cuda_event_id",
  CASE WHEN s.sync_type IN (1, 2) THEN s.record_correlation_id END
    AS "args.wait_on_cuda_event_record_corr_id"
FROM _chrome_sync_row s
CROSS JOIN chrome_base b
-- file order, as the reference writes them: the held rows come in the order of the join to
-- the context's device, which under --where is a hash table's (it differed between builds)
ORDER BY s.ord
