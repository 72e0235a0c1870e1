-- @export chrome section=events order=15
-- chrome_cycle_counter: a "Cycles (Current Kernel)" `C` sample at each kernel's start:
-- elapsed cycles = duration x the device's median SM clock (_gpu_sm_clock), truncated to an
-- integer. Devices without clock samples get none.
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
JOIN _gpu_sm_clock c ON c.device_id = k.device_id
CROSS JOIN chrome_base b
WHERE c.clock_hz > 0
