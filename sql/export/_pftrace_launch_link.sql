-- _pftrace_launch_link: the render stages each correlation id launched, for the launch
-- slices' gpu_correlation. When graph_deps is known, a graphed op with recorded
-- predecessors (a graph_deps key) is left out, so a graph launch links only to its replay's
-- roots and reaches the rest through event_wait_ids; eager ops always link. The list is
-- unordered (an ordered array_agg was most of the export's time): the slice writes it
-- ascending.
CREATE OR REPLACE VIEW _pftrace_launch_link AS
SELECT
  r.correlation_id,
  -- render-stage event ids, in no order
  array_agg(r.event_id) AS event_ids
FROM _pftrace_render_row r
CROSS JOIN (SELECT count(*) AS n FROM graph_deps) g
LEFT JOIN (SELECT DISTINCT node_id FROM graph_deps) k ON k.node_id = r.graph_node_id
WHERE g.n = 0 OR k.node_id IS NULL
GROUP BY r.correlation_id
