-- @export chrome section=events order=4
-- chrome_memset: one Chrome `X` event per gpu_memset row, named "Memset" (the memory kind
-- stays a number, as in the reference). Column naming as in chrome_kernel.
CREATE OR REPLACE VIEW chrome_memset AS
SELECT
  -- event phase, category, name
  'X' AS ph,
  'gpu_memset' AS cat,
  'Memset' AS name,
  -- device as process, drawn stream as thread
  m.device_id AS pid,
  chrome_tid(drawn_lane(m.graph_node_id, m.logical_lane, m.stream_id)) AS tid,
  -- start and duration, µs
  greatest(CAST(m.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(m.end_ns - m.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- ids
  m.device_id AS "args.device",
  m.context_id AS "args.context",
  drawn_lane(m.graph_node_id, m.logical_lane, m.stream_id) AS "args.stream",
  m.correlation_id AS "args.correlation",
  -- bytes set, value written, memory kind, flags, channel
  m.bytes AS "args.bytes",
  m.value AS "args.value",
  m.memory_kind AS "args.memory kind",
  m.flags AS "args.flags",
  m.channel AS "args.channel",
  m.channel_type AS "args.channel_type",
  -- graph id / lower 32 bits of the node id, when graphed
  CASE WHEN m.graph_id <> 0 THEN m.graph_id END AS "args.graph id",
  CASE WHEN m.graph_node_id <> 0 THEN m.graph_node_id & 4294967295 END AS "args.graph node id",
  -- annotation and metadata spread into args
  m.annotation AS "args.*annotation",
  m.metadata AS "args.*metadata",
  -- the CUDA stream of a moved op
  NULLIF(m.stream_id, drawn_lane(m.graph_node_id, m.logical_lane, m.stream_id)) AS "args.original_stream"
FROM gpu_memset m
CROSS JOIN chrome_base b
