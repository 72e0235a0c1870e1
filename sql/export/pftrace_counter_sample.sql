-- @export pftrace
-- pftrace_counter_sample: the GpuCounterEvent samples of the .pftrace export
-- (_pftrace_counter_source) numbered in the reference's merged order: source, spec, row.
-- Counter ids number the specs that have samples 0, 1, 2, ... in that order.
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
FROM _pftrace_counter_source s
