-- @export pftrace
-- pftrace_overhead: the overhead slices of the .pftrace export: the records chrome keeps
-- (_chrome_overhead_row), in file order.
CREATE OR REPLACE VIEW pftrace_overhead AS
SELECT
  -- file order
  ord,
  name,
  start_ns,
  end_ns
FROM _chrome_overhead_row
