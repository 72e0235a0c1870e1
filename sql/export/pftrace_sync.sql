-- @export pftrace
-- pftrace_sync: the cuda_sync slices of the .pftrace export (_chrome_sync_row: device of the
-- context, stream with "none" as -1, the awaited event's record correlation), in file order;
-- `wait` splits them into the reference's two groups (Event Sync / Stream Wait Event carry
-- the wait_on_* annotations).
CREATE OR REPLACE VIEW pftrace_sync AS
SELECT
  -- file order
  ord,
  -- sync types 1 and 2
  sync_type IN (1, 2) AS wait,
  -- slice name and "cuda_sync_kind"
  kind_name,
  start_ns,
  end_ns,
  -- track: device as process, stream as thread; the int annotations
  device_id,
  stream,
  correlation_id,
  context_id,
  cuda_event_id,
  record_correlation_id
FROM _chrome_sync_row
