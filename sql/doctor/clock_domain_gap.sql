-- @check clock_domain_gap severity=error: windows whose CPU events and GPU activity lie far apart in time, a likely clock-domain bug
-- The CPU trace and the CUPTI records of a window cover the same stretch of time on one axis
-- (unix ns). Parameter `max_gap_ns` = 10 s: GPU work trails the CPU by at most the launch
-- queue's depth (well under a second, seconds on a stalled GPU), while a clock-domain mix-up
-- (a monotonic clock against the realtime one, a trace without baseTimeNanoseconds, a wrong
-- base) puts them hours to decades apart. The gap is the distance between the two ranges
-- (0 when they overlap); GPU activity is gpu_op and api_call, unknown (0) starts left out,
-- CPU events every cpu_event row with a time but metadata (ph 'M'). One row per window.
CREATE OR REPLACE VIEW clock_domain_gap AS
WITH params AS (SELECT 10000000000 AS max_gap_ns),
cpu AS (
  SELECT {{part}} k, min(ts_ns) AS cpu_start_ns, max(ts_ns + coalesce(dur_ns, 0)) AS cpu_end_ns
  FROM (SELECT {{part}} 0 AS k, ts_ns, dur_ns FROM cpu_event WHERE ph <> 'M' AND ts_ns IS NOT NULL)
  GROUP BY {{part}} k
),
gpu AS (
  SELECT {{part}} k, min(ts) AS gpu_start_ns, max(ts + dur) AS gpu_end_ns
  FROM (
    SELECT {{part}} 0 AS k, ts, dur FROM gpu_op WHERE ts <> 0
    UNION ALL
    SELECT {{part}} 0 AS k, ts, dur FROM api_call WHERE ts <> 0
  )
  GROUP BY {{part}} k
)
SELECT
  {{part c}}
  -- the CPU events' range, unix ns
  c.cpu_start_ns, c.cpu_end_ns,
  -- the GPU activity's range, unix ns
  g.gpu_start_ns, g.gpu_end_ns,
  -- the distance between the two ranges, ns (positive: the CPU range ends first)
  CASE WHEN c.cpu_end_ns < g.gpu_start_ns THEN g.gpu_start_ns - c.cpu_end_ns
       ELSE g.gpu_end_ns - c.cpu_start_ns END AS gap_ns
FROM cpu c
JOIN gpu g ON g.k = c.k {{same_window g c}}
CROSS JOIN params p
WHERE c.cpu_end_ns + p.max_gap_ns < g.gpu_start_ns
   OR g.gpu_end_ns + p.max_gap_ns < c.cpu_start_ns
