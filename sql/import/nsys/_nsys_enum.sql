-- _nsys_enum: the report's own ENUM_* codes mapped to CUPTI's. nsys numbers some enums its
-- own way (ENUM_CUDA_MEM_KIND has PAGEABLE = 0, where CUPTI has UNKNOWN = 0), so a code is
-- matched through the enumerator's name, by its last words, which stay stable across schema
-- versions while the prefixes changed. One row per (enum, nsys code); a name matched by no
-- suffix is CUPTI's 0 (unknown).
CREATE OR REPLACE VIEW _nsys_enum AS
SELECT
  -- which enum: 'copy', 'mem' or 'sync'
  e.enum,
  -- nsys's code, as stored in the activity tables
  e.id,
  -- CUPTI's code for the same enumerator
  COALESCE(MAX(c.code), 0) AS code
FROM (
  SELECT 'copy' AS enum, id, name FROM ENUM_CUDA_MEMCPY_OPER
  UNION ALL SELECT 'mem', id, name FROM ENUM_CUDA_MEM_KIND
  UNION ALL SELECT 'sync', id, name FROM ENUM_CUPTI_SYNC_TYPE
) e
LEFT JOIN (VALUES
  ('copy', 'KIND_UNKNOWN', 0), ('copy', 'KIND_HTOD', 1), ('copy', 'KIND_DTOH', 2),
  ('copy', 'KIND_HTOA', 3), ('copy', 'KIND_ATOH', 4), ('copy', 'KIND_ATOA', 5),
  ('copy', 'KIND_ATOD', 6), ('copy', 'KIND_DTOA', 7), ('copy', 'KIND_DTOD', 8),
  ('copy', 'KIND_HTOH', 9), ('copy', 'KIND_PTOP', 10),
  ('copy', 'KIND_UVM_HTOD', 1), ('copy', 'KIND_UVM_DTOH', 2), ('copy', 'KIND_UVM_DTOD', 8),
  ('mem', 'KIND_UNKNOWN', 0), ('mem', 'KIND_PAGEABLE', 1), ('mem', 'KIND_PINNED', 2),
  ('mem', 'KIND_DEVICE', 3), ('mem', 'KIND_ARRAY', 4), ('mem', 'KIND_MANAGED', 5),
  ('mem', 'KIND_DEVICE_STATIC', 6), ('mem', 'KIND_MANAGED_STATIC', 7),
  ('sync', 'TYPE_UNKNOWN', 0), ('sync', 'TYPE_EVENT_SYNCHRONIZE', 1),
  ('sync', 'TYPE_STREAM_WAIT_EVENT', 2), ('sync', 'TYPE_STREAM_SYNCHRONIZE', 3),
  ('sync', 'TYPE_CONTEXT_SYNCHRONIZE', 4)
) AS c(enum, suffix, code)
  ON c.enum = e.enum AND ends_with(upper(e.name), concat('_', c.suffix))
GROUP BY e.enum, e.id
