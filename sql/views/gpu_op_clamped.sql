-- gpu_op_clamped: gpu_op with each op's end clamped to the start of the next op on its
-- (device_id, stream_id) lane, so ops on one lane never overlap when drawn. The next start
-- comes from LEAD() over the lane in start order; the raw end is kept.
CREATE OR REPLACE VIEW gpu_op_clamped AS
SELECT
  {{part}}
  -- see gpu_op
  kind, name, ts, device_id, context_id, stream_id, correlation_id, graph_id, graph_node_id,
  -- duration after the clamp, ns
  CASE WHEN next_ts IS NOT NULL AND next_ts < ts + dur THEN greatest(next_ts - ts, 0) ELSE dur END AS dur,
  -- the op's own end before the clamp, unix ns
  ts + dur AS raw_end_ts,
  -- whether the end was moved
  next_ts IS NOT NULL AND next_ts < ts + dur AS clamped
FROM (
  SELECT *,
    LEAD(ts) OVER (PARTITION BY {{part}} device_id, stream_id ORDER BY ts, dur) AS next_ts
  FROM gpu_op
)
