-- _nsys_api: CUPTI_ACTIVITY_KIND_RUNTIME, which holds runtime and driver calls alike, with
-- each call's domain, name and thread. The domain is `eventClass` where the schema has it
-- (0 runtime, 1 driver: ENUM_NSYS_EVENT_CLASS), else the name: `cu*` but not `cuda*` is the
-- driver. Rows of eventClass 67 (CUDA backtrace) are left out: some reports (2.x, e.g. Nsight
-- Systems 2022.2) repeat a call there, under its plain name, enclosing it in time, with its
-- thread and correlation id, to carry its stack; it is not a second call. `globalTid` packs
-- <HW:8><VM:8><PID:24><TID:24>. What a name gives (its suffix-free form, its domain) is
-- computed once per StringIds entry, not once per call: a report has millions of calls of a
-- few hundred names.
CREATE OR REPLACE VIEW _nsys_api AS
SELECT
  -- the process key the window is cut by
  (r.globalTid >> 24) << 24 AS _global_pid,
  -- 'runtime' or 'driver'
  CASE
    WHEN r.eventClass = 1 THEN 'driver'
    WHEN r.eventClass = 0 THEN 'runtime'
    WHEN n.driver_name THEN 'driver'
    ELSE 'runtime'
  END AS domain,
  -- the StringIds id of the name (what _nsys_api_call finds the cbid by)
  r.nameId AS _name_id,
  -- the name as nsys wrote it (CUPTI's enumerator name, e.g. cudaLaunchKernel_v7000)
  COALESCE(n.raw_name, '') AS raw_name,
  -- without the `_vNNNN` suffix, as the cbid table names calls
  COALESCE(n.name, '') AS name,
  -- start and end, unix ns
  r.start + s.epoch_ns AS start_ns,
  r."end" + s.epoch_ns AS end_ns,
  -- OS process and thread ids
  (r.globalTid >> 24) & 16777215 AS process_id,
  r.globalTid & 16777215 AS thread_id,
  -- links the call to the GPU ops it launched (within its process)
  r.correlationId AS correlation_id
FROM CUPTI_ACTIVITY_KIND_RUNTIME r
CROSS JOIN nsys_session s
LEFT JOIN (
  SELECT
    id,
    value AS raw_name,
    regexp_replace(value, '_v[0-9]+$', '') AS name,
    starts_with(value, 'cu') AND NOT starts_with(value, 'cuda') AS driver_name
  FROM StringIds
) n ON n.id = r.nameId
-- 67: TRACE_PROCESS_EVENT_CUDABACKTRACE (ENUM_NSYS_EVENT_CLASS); NULL where the schema lacks it
WHERE r.eventClass IS NULL OR r.eventClass <> 67
