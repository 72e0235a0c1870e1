-- @export pftrace
-- pftrace_render: one GpuRenderStageEvent per _pftrace_render_row, in event_id order, with
-- what the encoder needs besides the row: the per-lane overlap clamp (a window over the
-- (gpu, lane) partition: each op ends no later than the next op's start on its lane;
-- Annotation rows keep their full extent, as the depth-0 parent), the hardware-queue lane
-- (pftrace_lane's iid: 100 + rank of the lane number among all lanes, as the reference ranks
-- them: by lane number alone, across GPUs), the graph dependencies it waits on: its graph_deps
-- predecessors (in list order) that ran in the same replay (correlation id; a node's later
-- row wins), as (list ordinal, event id) pairs the encoder puts in list order (an ordered
-- array_agg was most of this plan's time). The columns only written out come from
-- _pftrace_render_extra, merge-joined on (stage_iid, ord) by the writer.
-- The window runs over narrow rows (ids, times, lanes) joined back by event id: sorting the
-- held rows for it would hold them twice. The hash joins build on their narrow side and
-- stream the held rows in event_id order, which is also (stage_iid, ord) order.
CREATE OR REPLACE VIEW pftrace_render AS
SELECT
  r.event_id,
  r.stage_iid,
  -- place within the stage: (stage_iid, ord) is event_id order
  r.ord,
  -- start, unix ns
  r.ts,
  -- clamped duration, ns
  CASE WHEN r.stage_iid = 4 THEN r.dur
       ELSE greatest(r.ts, least(r.ts + r.dur, COALESCE(n.next_ts, 9223372036854775807))) - r.ts
  END AS dur,
  -- gpu_id
  r.device_id,
  -- hw_queue_iid: the lane's gpu_specifications iid
  pftrace_hw_queue(r.lane) AS hw_queue_iid,
  -- what this op waits on, {ordinal, event_id} in no order (NULL: none)
  w.waits,
  r.name,
  -- numeric extra_data sources ("stream id" is the raw CUDA stream, not the lane)
  r.stream_id,
  r.correlation_id,
  -- "graph node id": the lower 32 bits
  r.graph_node_id & 4294967295 AS graph_node_id_low
FROM (
  SELECT event_id,
    LEAD(ts) OVER (PARTITION BY stage_iid = 4, device_id, lane & 4294967295
                   ORDER BY ts, event_id) AS next_ts
  FROM _pftrace_render_row
) n
JOIN _pftrace_render_row r ON n.event_id = r.event_id
LEFT JOIN (
  SELECT o.event_id,
    array_agg(named_struct('ordinal', d.pred_ordinal, 'event_id', m.event_id)) AS waits
  FROM _pftrace_render_row o
  JOIN graph_deps d ON d.node_id = o.graph_node_id AND d.pred_node_id IS NOT NULL
  JOIN (
    SELECT correlation_id, graph_node_id, max(event_id) AS event_id
    FROM _pftrace_render_row
    WHERE graph_node_id <> 0
    GROUP BY correlation_id, graph_node_id
  ) m ON m.correlation_id = o.correlation_id AND m.graph_node_id = d.pred_node_id
  WHERE o.graph_node_id <> 0
  GROUP BY o.event_id
) w ON w.event_id = r.event_id
