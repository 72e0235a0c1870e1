-- @check cpu_trace_missing severity=warning: windows without a Kineto CPU trace, so cpu_event and cpu_launch are empty for them
-- A window's CPU side is its cpu_trace.json.gz (window-format.md). Without it no GPU op can be
-- traced back to the CPU operator that issued it, and the exports have no CPU threads. One row
-- per window (see the cpu_trace table).
CREATE OR REPLACE VIEW cpu_trace_missing AS
SELECT
  {{part}}
  -- the window's directory
  dir
FROM cpu_trace
WHERE path IS NULL
