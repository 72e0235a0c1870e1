-- _gpu_sm_clock: each device's median SM clock, Hz (environment kind 1, low 32 bits, MHz),
-- which the "Cycles (Current Kernel)" counter of both exports multiplies kernel durations
-- by. Devices without clock samples have no row.
CREATE OR REPLACE VIEW _gpu_sm_clock AS
SELECT
  device_id,
  -- median SM clock, Hz
  median(CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE)) * 1000000.0 AS clock_hz
FROM environment
WHERE environment_kind = 1
GROUP BY device_id
