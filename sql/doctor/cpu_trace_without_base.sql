-- @check cpu_trace_without_base severity=warning: CPU traces without baseTimeNanoseconds, whose times are read as microseconds since 1970
-- Kineto writes event times relative to `baseTimeNanoseconds`; without the member tracesql
-- reads `ts` as microseconds since the Unix epoch, which is right only for traces that wrote
-- absolute times. When that is wrong, clock_domain_gap fires as well. One row per trace.
CREATE OR REPLACE VIEW cpu_trace_without_base AS
SELECT
  {{part}}
  -- the trace file
  path
FROM cpu_trace
WHERE path IS NOT NULL AND base_ns IS NULL
