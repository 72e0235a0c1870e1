-- nsys_session: one row of report-wide facts the other mappings cross-join. nsys counts every
-- time from the session start, so `epoch_ns` is what turns them into Unix ns (0 when the
-- report has no TARGET_INFO_SESSION_START_TIME: times stay relative and the importer warns).
-- The `has_*` flags say whether the report carries the ENUM_* table a code is mapped through;
-- without it the code is kept as written.
CREATE OR REPLACE VIEW nsys_session AS
SELECT
  -- session start, unix ns; 0 = unknown
  (SELECT COALESCE(MAX(utcEpochNs), 0) FROM TARGET_INFO_SESSION_START_TIME) AS epoch_ns,
  -- the report has ENUM_CUDA_MEMCPY_OPER
  (SELECT count(*) > 0 FROM ENUM_CUDA_MEMCPY_OPER) AS has_copy_enum,
  -- the report has ENUM_CUDA_MEM_KIND
  (SELECT count(*) > 0 FROM ENUM_CUDA_MEM_KIND) AS has_mem_enum,
  -- the report has ENUM_CUPTI_SYNC_TYPE
  (SELECT count(*) > 0 FROM ENUM_CUPTI_SYNC_TYPE) AS has_sync_enum
