-- @check stream_overlap severity=warning total=cut_ns: GPU ops that overlap the next op on their stream, which gpu_op_clamped cuts short
-- Ops on one CUDA stream run one after another, so an op that ends after the next one starts
-- means skewed timestamps (or two streams reported under one id). gpu_op_clamped, and the
-- exporters with it, end such an op at the next one's start so lanes draw without overlap;
-- `cut_ns` is the time that removes, which no longer counts in sums of `dur` over the view.
CREATE OR REPLACE VIEW stream_overlap AS
SELECT
  {{part}}
  -- the lane (device, stream) and the op (see gpu_op)
  device_id, stream_id, ts, kind, name,
  -- the op's own end, unix ns
  raw_end_ts,
  -- the duration after the clamp, ns
  dur,
  -- the nanoseconds the clamp cuts
  raw_end_ts - (ts + dur) AS cut_ns,
  correlation_id
FROM gpu_op_clamped
WHERE clamped
