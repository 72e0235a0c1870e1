-- @report memcpy_summary: memory copies per copy kind, and memsets: time, bytes, throughput
-- Follows Nsight Systems' `cuda_gpu_mem_time_sum` and `cuda_gpu_mem_size_sum` in one table.
-- The copy kind is CUPTI's (CUpti_ActivityMemcpyKind).
WITH op AS (
  SELECT {{part}}
    concat('memcpy ', CASE copy_kind
      WHEN 1 THEN 'HtoD' WHEN 2 THEN 'DtoH' WHEN 3 THEN 'HtoA' WHEN 4 THEN 'AtoH'
      WHEN 5 THEN 'AtoA' WHEN 6 THEN 'AtoD' WHEN 7 THEN 'DtoA' WHEN 8 THEN 'DtoD'
      WHEN 9 THEN 'HtoH' WHEN 10 THEN 'PtoP' ELSE 'unknown' END) AS kind,
    end_ns - start_ns AS dur, bytes
  FROM gpu_memcpy
  UNION ALL
  SELECT {{part}} 'memset', end_ns - start_ns, bytes FROM gpu_memset
)
SELECT
  {{part}}
  -- 'memcpy HtoD', 'memcpy DtoH', ..., or 'memset'
  kind,
  -- number of operations
  COUNT(*) AS count,
  -- summed duration, ns
  SUM(dur) AS total_ns,
  -- share of all copy and set time in the window, percent
  100.0 * SUM(dur) / SUM(SUM(dur)) OVER ({{partition_by_part}}) AS time_pct,
  -- mean and median duration, ns
  AVG(dur) AS avg_ns,
  MEDIAN(dur) AS med_ns,
  -- bytes moved or set: total, mean per operation
  SUM(bytes) AS total_bytes,
  AVG(bytes) AS avg_bytes,
  -- total bytes over total time (bytes per ns = GB/s)
  CAST(SUM(bytes) AS DOUBLE) / NULLIF(SUM(dur), 0) AS gb_per_s
FROM op
GROUP BY {{part}} kind
ORDER BY {{part}} total_ns DESC, kind
