-- @export chrome section=events order=3
-- chrome_memcpy: one Chrome `X` event per gpu_memcpy row, named "Memcpy", with copy and
-- memory kinds named as the reference names them (an unknown kind stays a number). Column
-- naming as in chrome_kernel.
CREATE OR REPLACE VIEW chrome_memcpy AS
SELECT
  -- event phase, category, name
  'X' AS ph,
  'gpu_memcpy' AS cat,
  'Memcpy' AS name,
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
  -- bytes copied
  m.bytes AS "args.bytes",
  -- copy direction and memory kinds, named (an unnamed kind as its number: `::enum`)
  CASE m.copy_kind WHEN 1 THEN 'HtoD' WHEN 2 THEN 'DtoH' WHEN 3 THEN 'HtoA'
    WHEN 4 THEN 'AtoH' WHEN 5 THEN 'AtoA' WHEN 6 THEN 'AtoD' WHEN 7 THEN 'DtoA'
    WHEN 8 THEN 'DtoD' WHEN 10 THEN 'PtoP' ELSE CAST(m.copy_kind AS VARCHAR)
  END AS "args.copy kind::enum",
  CASE m.src_kind WHEN 0 THEN 'unknown' WHEN 1 THEN 'pageable' WHEN 2 THEN 'pinned' WHEN 3 THEN 'device' WHEN 4 THEN 'array' WHEN 5 THEN 'managed' WHEN 6 THEN 'device_static' WHEN 7 THEN 'managed_static'
    ELSE CAST(m.src_kind AS VARCHAR) END AS "args.src kind::enum",
  CASE m.dst_kind WHEN 0 THEN 'unknown' WHEN 1 THEN 'pageable' WHEN 2 THEN 'pinned' WHEN 3 THEN 'device' WHEN 4 THEN 'array' WHEN 5 THEN 'managed' WHEN 6 THEN 'device_static' WHEN 7 THEN 'managed_static'
    ELSE CAST(m.dst_kind AS VARCHAR) END AS "args.dst kind::enum",
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
FROM gpu_memcpy m
CROSS JOIN chrome_base b
