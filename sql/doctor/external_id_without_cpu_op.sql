-- @check external_id_without_cpu_op severity=warning: API calls whose external id names no CPU operator of the window's CPU trace, so cpu_launch leaves them out
-- CUPTI records the innermost external id pushed when a call was made (external_correlation);
-- Kineto writes the same id on the cpu_op or user_annotation event that pushed it. A call
-- whose id has no such event in the trace cannot be attributed to an operator: the trace was
-- cut, or the ids come from another run. Windows without a CPU trace are left out
-- (cpu_trace_missing reports them); external_correlation rows of calls that are not in the
-- window are expected (the table is not bucketed) and left out too.
CREATE OR REPLACE VIEW external_id_without_cpu_op AS
SELECT
  {{part x}}
  -- the call's start (unix ns), the external id, and the call it is attached to (see api_call)
  a.ts AS api_ts,
  x.external_id,
  a.correlation_id,
  a.domain AS api_domain,
  a.name AS api_name
FROM external_correlation x
JOIN api_call a ON a.correlation_id = x.correlation_id {{same_window a x}}
JOIN cpu_trace t ON t.path IS NOT NULL {{same_window t x}}
LEFT JOIN cpu_launch l ON l.correlation_id = x.correlation_id
  AND l.external_id = x.external_id {{same_window l x}}
WHERE l.correlation_id IS NULL
  AND x.correlation_id <> 0
