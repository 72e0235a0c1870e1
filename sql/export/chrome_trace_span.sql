-- @export chrome section=span
-- chrome_trace_span: the "PyTorch Profiler (0)" span the exporter regenerates over every
-- duration (`X`) event of the output (CPU trace and window, the Trace category aside), and
-- its two instants: "Iteration Start" at the first start, "Record Window End" 1 ns after
-- the last end. The extent comes from `chrome_span_bound`, which the export fills as it
-- writes the events (one pass over the plans, not two). No row when it holds none: an
-- empty window.
CREATE OR REPLACE VIEW chrome_trace_span AS
SELECT
  -- phase: the X span, then the two global (`s` = g) instants
  'X' AS ph,
  CAST(NULL AS VARCHAR) AS s,
  'Trace' AS cat,
  'PyTorch Profiler (0)' AS name,
  -- Kineto's string pid/tid rows
  'Spans' AS pid,
  'PyTorch Profiler' AS tid,
  -- µs
  min_ts AS ts,
  greatest(max_end - min_ts, 0.0) AS dur,
  -- Kineto's op count, always 0 here
  0 AS "args.Op count"
FROM chrome_span_bound
UNION ALL
SELECT 'i', 'g', NULL, 'Iteration Start: PyTorch Profiler', 'Traces', 'Trace PyTorch Profiler',
  min_ts, NULL, NULL
FROM chrome_span_bound
UNION ALL
SELECT 'i', 'g', NULL, 'Record Window End', '', '', max_end + 0.001, NULL, NULL
FROM chrome_span_bound
