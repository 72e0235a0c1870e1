-- diff_step: each paired step's time (its span) in both runs and the change, NEW's minus
-- BASE's, split by cause. The parts add up to delta_ns exactly:
--   gpu_ns        the change of GPU time of paired kernels, copies and sets
--   added_ns      the GPU time of work only NEW has
--   removed_ns    minus the GPU time of work only BASE has
--   launch_ns     the change of CPU time of the calls that launched paired work
--   host_wait_ns  the change of the streams' idle time waiting for the host
--   residual_ns   the rest: overlap of streams, CPU work that launches nothing, ...
-- Each GPU figure sums over the step's ops, and concurrent streams add, so a part may exceed
-- the step's change; the residual then carries the overlap back.
CREATE OR REPLACE VIEW diff_step AS
WITH span AS (
  SELECT {{part b}} b.step, b.step_name AS base_step_name, n.step_name AS new_step_name,
    b.step_dur AS base_ns, n.step_dur AS new_ns
  FROM (SELECT * FROM _diff_step WHERE run = 'base' AND {{param steps}}) b
  JOIN _diff_step n ON n.step = b.step {{same_window n b}}
  WHERE n.run = 'new'
),
cause AS (
  SELECT
    {{part}}
    step,
    SUM(CASE WHEN change = 'paired' THEN new_dur - base_dur ELSE 0 END) AS gpu_ns,
    SUM(CASE WHEN change = 'added' THEN new_dur ELSE 0 END) AS added_ns,
    -SUM(CASE WHEN change = 'removed' THEN base_dur ELSE 0 END) AS removed_ns,
    SUM(CASE WHEN change = 'paired' THEN new_call_dur - base_call_dur ELSE 0 END) AS launch_ns,
    SUM(COALESCE(new_host_wait, 0) - COALESCE(base_host_wait, 0)) AS host_wait_ns
  FROM diff_gpu_op
  GROUP BY {{part}} step
),
parts AS (
  SELECT
    {{part s}} s.step, s.base_step_name, s.new_step_name, s.base_ns, s.new_ns,
    s.new_ns - s.base_ns AS delta_ns,
    COALESCE(c.gpu_ns, 0) AS gpu_ns,
    COALESCE(c.added_ns, 0) AS added_ns,
    COALESCE(c.removed_ns, 0) AS removed_ns,
    COALESCE(c.launch_ns, 0) AS launch_ns,
    COALESCE(c.host_wait_ns, 0) AS host_wait_ns
  FROM span s
  LEFT JOIN cause c ON c.step = s.step {{same_window c s}}
)
SELECT
  *,
  delta_ns - gpu_ns - added_ns - removed_ns - launch_ns - host_wait_ns AS residual_ns
FROM parts
