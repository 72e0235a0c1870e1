-- api_call: every CUDA runtime and driver API call in one shape, named through the cbid
-- table (a cbid the table does not know takes the window's own `name`, else `cbid_<n>`). Speaks Perfetto's vocabulary:
-- `ts` and `dur` in ns. `{{part}}` expands to an archive's partition columns.
CREATE OR REPLACE VIEW api_call AS
SELECT
  {{part r}}
  -- in the export's catalog: the row's 1-based place in its table's file
  {{file_row r}}
  -- 'runtime' or 'driver'
  'runtime' AS domain,
  -- CUPTI callback id
  r.cbid,
  -- API name without the `_vNNNN` version suffix, e.g. cudaLaunchKernel
  COALESCE(c.name, r.name, concat('cbid_', CAST(r.cbid AS VARCHAR))) AS name,
  -- call start, unix ns
  r.start_ns AS ts,
  -- call duration, ns
  r.end_ns - r.start_ns AS dur,
  -- OS process id
  r.process_id,
  -- raw CUPTI thread id (pthread-style, 64-bit)
  r.thread_id,
  -- the thread id's low 32 bits read as signed, the key of thread_resource
  CASE WHEN (r.thread_id & 4294967295) >= 2147483648
       THEN (r.thread_id & 4294967295) - 4294967296
       ELSE r.thread_id & 4294967295 END AS thread_id_i32,
  -- links the call to the GPU work it launched
  r.correlation_id
FROM cuda_runtime r
LEFT JOIN cbid c ON c.domain = 'runtime' AND c.cbid = r.cbid
UNION ALL
SELECT
  {{part d}}
  {{file_row d}}
  'driver' AS domain,
  d.cbid,
  COALESCE(c.name, d.name, concat('cbid_', CAST(d.cbid AS VARCHAR))) AS name,
  d.start_ns AS ts,
  d.end_ns - d.start_ns AS dur,
  d.process_id,
  d.thread_id,
  CASE WHEN (d.thread_id & 4294967295) >= 2147483648
       THEN (d.thread_id & 4294967295) - 4294967296
       ELSE d.thread_id & 4294967295 END AS thread_id_i32,
  d.correlation_id
FROM cuda_driver d
LEFT JOIN cbid c ON c.domain = 'driver' AND c.cbid = d.cbid
