-- chrome_cycle_counter: a "Cycles (Current Kernel)" `C` sample at each kernel's start:
-- elapsed cycles = duration x the device's median SM clock (environment kind 1, low 32
-- bits, MHz), truncated to an integer. Devices without clock samples get none.
CREATE OR REPLACE VIEW chrome_cycle_counter AS
SELECT
  -- counter event and name
  'C' AS ph,
  'Cycles (Current Kernel)' AS name,
  -- the device's counter process
  concat('GPU ', CAST(k.device_id AS VARCHAR), ' Counters') AS pid,
  -- kernel start, µs (not clamped)
  CAST(k.start_ns - b.base_ns AS DOUBLE) / 1000.0 AS ts,
  -- elapsed cycles
  CAST((CAST(greatest(k.end_ns - k.start_ns, 0) AS DOUBLE) / 1000000000.0) * c.clock_hz
    AS BIGINT) AS "args."
FROM kernel k
JOIN (
  SELECT device_id,
    median(CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE)) * 1000000.0 AS clock_hz
  FROM environment
  WHERE environment_kind = 1
  GROUP BY device_id
) c ON c.device_id = k.device_id
CROSS JOIN chrome_base b
WHERE c.clock_hz > 0
