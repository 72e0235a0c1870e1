-- @export chrome section=cpu
-- chrome_cpu_event: the Kineto CPU trace events copied into the output, in trace order: all
-- but the profiler span and the two instants the exporter regenerates. `leading` marks the
-- metadata events before the first other event, after which the window's metadata goes.
CREATE OR REPLACE VIEW chrome_cpu_event AS
SELECT
  -- position in the CPU trace's traceEvents (the export copies cpu_event.raw of it)
  e.event_index,
  -- start and duration (µs from the trace base, 0 when absent) of a duration event outside
  -- the Trace category, which the profiler span covers, as the reference reads them from
  -- the event's text; NULL for every other event
  CASE WHEN e.ph = 'X' AND (e.cat IS DISTINCT FROM 'Trace')
       THEN us_as_read(COALESCE(e.ts_ns - b.cpu_base_ns, 0)) END AS span_ts,
  CASE WHEN e.ph = 'X' AND (e.cat IS DISTINCT FROM 'Trace')
       THEN us_as_read(COALESCE(e.dur_ns, 0)) END AS span_dur,
  -- whether the event belongs to the leading run of metadata (`M`) events
  e.event_index < f.first_other AS leading
FROM cpu_event e
CROSS JOIN chrome_base b
CROSS JOIN (
  SELECT COALESCE(min(event_index), 9223372036854775807) AS first_other
  FROM cpu_event
  WHERE (ph IS DISTINCT FROM 'M')
    AND NOT (COALESCE(cat = 'Trace' AND name = 'PyTorch Profiler (0)', false)
             OR COALESCE(name IN ('Iteration Start: PyTorch Profiler', 'Record Window End'), false))
) f
WHERE NOT (COALESCE(e.cat = 'Trace' AND e.name = 'PyTorch Profiler (0)', false)
           OR COALESCE(e.name IN ('Iteration Start: PyTorch Profiler', 'Record Window End'), false))
