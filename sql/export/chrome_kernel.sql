-- @export chrome section=events order=1
-- chrome_kernel: one Chrome `X` event per kernel, with the reference's args. Column names
-- are the JSON keys the sink writes (`args.k` inside "args"; a NULL leaves the key out;
-- `args.*annotation` / `args.*metadata` are spread into args; the sink's conventions are
-- in src/sink/chrome/mod.rs). A graphed kernel moved to a resolver lane is drawn there and
-- keeps its stream as original_stream.
CREATE OR REPLACE VIEW chrome_kernel AS
SELECT
  -- event phase and category
  'X' AS ph,
  'kernel' AS cat,
  -- kernel name
  k.name,
  -- device as process, drawn stream as thread (absolute value)
  k.device_id AS pid,
  chrome_tid(drawn_lane(k.graph_node_id, k.logical_lane, k.stream_id)) AS tid,
  -- start and duration, µs from the trace base, never negative
  greatest(CAST(k.start_ns - b.base_ns AS DOUBLE) / 1000.0, 0.0) AS ts,
  greatest(CAST(k.end_ns - k.start_ns AS DOUBLE) / 1000.0, 0.0) AS dur,
  -- ids
  k.device_id AS "args.device",
  k.context_id AS "args.context",
  -- the drawn stream (the lane when moved)
  drawn_lane(k.graph_node_id, k.logical_lane, k.stream_id) AS "args.stream",
  k.correlation_id AS "args.correlation",
  -- launch geometry as [x, y, z]
  k.grid_x AS "args.grid[0]",
  k.grid_y AS "args.grid[1]",
  k.grid_z AS "args.grid[2]",
  k.block_x AS "args.block[0]",
  k.block_y AS "args.block[1]",
  k.block_z AS "args.block[2]",
  k.registers_per_thread AS "args.registers per thread",
  -- static + dynamic shared memory, bytes
  k.static_shared_memory + k.dynamic_shared_memory AS "args.shared memory",
  k.priority AS "args.priority",
  k.queued AS "args.queued",
  k.channel AS "args.channel",
  k.channel_type AS "args.channel_type",
  -- graph id, when graphed
  CASE WHEN k.graph_id <> 0 THEN k.graph_id END AS "args.graph id",
  -- lower 32 bits of the graph node id, when graphed
  CASE WHEN k.graph_node_id <> 0 THEN k.graph_node_id & 4294967295 END AS "args.graph node id",
  -- the annotation and the metadata blob, spread into args
  k.annotation AS "args.*annotation",
  k.metadata AS "args.*metadata",
  -- the CUDA stream of a moved op
  NULLIF(k.stream_id, drawn_lane(k.graph_node_id, k.logical_lane, k.stream_id)) AS "args.original_stream"
FROM kernel k
CROSS JOIN chrome_base b
