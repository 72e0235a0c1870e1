-- pftrace_counter_sample: the GpuCounterEvent samples of the .pftrace export, in the
-- reference's merged order: _gpu_counter_sample (environment, then pm_sampling), then one
-- "Cycles (Current Kernel)" sample per kernel of an active device at its start (duration x
-- the device's median SM clock; devices without a clock get none). Counter ids number the
-- specs that have samples 0, 1, 2, ... in that order.
CREATE OR REPLACE VIEW pftrace_counter_sample AS
SELECT
  -- position in the merged order (1-based)
  CAST(ROW_NUMBER() OVER (ORDER BY s.src, s.spec, s.ord) AS BIGINT) AS pos,
  -- global counter id
  CAST(DENSE_RANK() OVER (ORDER BY s.src, s.spec) AS BIGINT) - 1 AS counter_id,
  s.name,
  s.device_id,
  -- sample time, unix ns
  s.start_ns,
  s.value,
  -- int-valued (cycles, rounded half away from zero) and in the COMPUTE group
  s.src = 2 AS is_compute
FROM (
  SELECT src, spec, ord, name, device_id, start_ns, value FROM _gpu_counter_sample
  UNION ALL
  SELECT 2, 0, k.ord, 'Cycles (Current Kernel)', k.device_id, k.start_ns,
    (CAST(greatest(k.end_ns - k.start_ns, 0) AS DOUBLE) / 1000000000.0) * c.clock_hz
  FROM (SELECT *, CAST(ROW_NUMBER() OVER () AS BIGINT) AS ord FROM kernel) k
  JOIN (
    SELECT device_id,
      median(CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE)) * 1000000.0 AS clock_hz
    FROM environment
    WHERE environment_kind = 1
    GROUP BY device_id
  ) c ON c.device_id = k.device_id
  CROSS JOIN (SELECT count(*) AS n FROM _chrome_active_device) ad
  LEFT JOIN _chrome_active_device a ON a.device_id = k.device_id
  WHERE c.clock_hz > 0 AND (ad.n = 0 OR a.device_id IS NOT NULL)
) s
