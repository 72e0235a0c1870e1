-- @export chrome section=events order=14
-- chrome_counter: Chrome `C` counter samples of the environment and pm_sampling counters
-- (_gpu_counter_sample: decoded, labelled, active devices only), on a per-device
-- "GPU <n> Counters" process.
CREATE OR REPLACE VIEW chrome_counter AS
SELECT
  -- counter event
  'C' AS ph,
  -- counter name
  c.name,
  -- the device's counter process (a string pid)
  concat('GPU ', CAST(c.device_id AS VARCHAR), ' Counters') AS pid,
  -- sample time, µs (not clamped)
  CAST(c.start_ns - b.base_ns AS DOUBLE) / 1000.0 AS ts,
  -- the sample as one unnamed series
  c.value AS "args."
FROM _gpu_counter_sample c
CROSS JOIN chrome_base b
-- the reference's merged order (source, spec, row), the same from run to run
ORDER BY c.src, c.spec, c.ord
