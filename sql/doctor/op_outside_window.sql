-- @check op_outside_window severity=warning: GPU ops and API calls that start outside the window's [start_ns, boundary_ns), which a producer should have bucketed elsewhere
-- The producer keeps the rows of a timed kind whose start lies in [window_info.start_ns,
-- window_info.boundary_ns) (window-schema.md, bucketing rules). A row outside was counted in
-- the wrong window (it may be counted twice over an archive) or has the unknown start 0.
-- Without a window_info row (or with boundary_ns NULL, for the end) nothing is checked.
CREATE OR REPLACE VIEW op_outside_window AS
SELECT
  {{part o}}
  -- start (unix ns); the gpu_op kind, or 'runtime' / 'driver' for an API call
  o.ts, o.kind, o.name, o.dur, o.correlation_id,
  -- the window's range, unix ns (see window_info)
  w.start_ns AS window_start_ns,
  w.boundary_ns AS window_boundary_ns
FROM (
  SELECT {{part}} kind, name, ts, dur, correlation_id FROM gpu_op
  UNION ALL
  SELECT {{part}} domain, name, ts, dur, correlation_id FROM api_call
) o
CROSS JOIN window_info w
WHERE (o.ts < w.start_ns OR o.ts >= w.boundary_ns) {{same_window o w}}
