-- _pftrace_launch_link: the render stages each correlation id launched, one row per stage,
-- for the launch slices' gpu_correlation. When graph_deps is known, a graphed op with
-- recorded predecessors (a graph_deps key) is left out, so a graph launch links only to its
-- replay's roots and reaches the rest through event_wait_ids; eager ops always link. Rows,
-- not lists: an array_agg per correlation id cost more time and memory than the join
-- (pftrace_api) and the slices' merge of a call's rows.
CREATE OR REPLACE VIEW _pftrace_launch_link AS
SELECT
  r.correlation_id,
  -- a render-stage event id it launched
  r.event_id
FROM _pftrace_render_row r
CROSS JOIN (SELECT count(*) AS n FROM graph_deps) g
LEFT JOIN (SELECT DISTINCT node_id FROM graph_deps) k ON k.node_id = r.graph_node_id
WHERE g.n = 0 OR k.node_id IS NULL
