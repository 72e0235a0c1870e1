-- @export pftrace
-- _pftrace_counter_source: the GpuCounterEvent samples of the .pftrace export, unnumbered:
-- _gpu_counter_sample (environment, then pm_sampling), then one "Cycles (Current Kernel)"
-- sample per kernel of an active device at its start (duration x the device's median SM
-- clock; devices without a clock get none). (src, spec, ord) is each sample's place in the
-- reference's merged order; pftrace_counter_sample numbers them, and the interning reads
-- the specs and devices from here without that sort.
CREATE OR REPLACE VIEW _pftrace_counter_source AS
SELECT
  -- 0 environment, 1 pm_sampling, 2 cycles
  src,
  -- the spec within its source
  spec,
  -- row order within the source file
  ord,
  -- counter name
  name,
  device_id,
  -- sample time, unix ns
  start_ns,
  value
FROM (
  SELECT src, spec, ord, name, device_id, start_ns, value FROM _gpu_counter_sample
  UNION ALL
  SELECT 2, 0, k.ord, 'Cycles (Current Kernel)', k.device_id, k.start_ns,
    (CAST(greatest(k.end_ns - k.start_ns, 0) AS DOUBLE) / 1000000000.0) * c.clock_hz
  FROM (SELECT *, file_row AS ord FROM kernel) k
  JOIN _gpu_sm_clock c ON c.device_id = k.device_id
  CROSS JOIN (SELECT count(*) AS n FROM _chrome_active_device) ad
  LEFT JOIN _chrome_active_device a ON a.device_id = k.device_id
  WHERE c.clock_hz > 0 AND (ad.n = 0 OR a.device_id IS NOT NULL)
)
