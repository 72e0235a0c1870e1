-- diff_by: the change rolled up per key, for each way of keying GPU work (`by`): 'kernel'
-- (normalized name), 'op' (issuing CPU op), 'annotation' (the innermost annotated range
-- around the launching call, NEW's, else BASE's), 'stream' (NEW's stream, else BASE's). Over the
-- paired steps: both runs' op counts and GPU time (ns), the change (delta_ns) and its parts
-- as in diff_step, the per-step spread of the key's GPU time, and whether the change is
-- larger than the step-to-step noise (Mann-Whitney over the per-step GPU times, a step
-- without the key counting 0; two-sided, flagged below `--alpha`).
CREATE OR REPLACE VIEW diff_by AS
WITH figures AS (
  SELECT
    {{part}}
    step, kernel, cpu_op, COALESCE(new_annotation, base_annotation) AS annotation,
    CAST(COALESCE(new_stream_id, base_stream_id) AS VARCHAR) AS stream,
    CASE WHEN base_dur IS NULL THEN 0 ELSE 1 END AS base_count,
    CASE WHEN new_dur IS NULL THEN 0 ELSE 1 END AS new_count,
    COALESCE(base_dur, 0) AS base_ns,
    COALESCE(new_dur, 0) AS new_ns,
    CASE WHEN change = 'paired' THEN new_dur - base_dur ELSE 0 END AS gpu_ns,
    CASE WHEN change = 'added' THEN new_dur ELSE 0 END AS added_ns,
    CASE WHEN change = 'removed' THEN -base_dur ELSE 0 END AS removed_ns,
    CASE WHEN change = 'paired' THEN new_call_dur - base_call_dur ELSE 0 END AS launch_ns,
    COALESCE(new_host_wait, 0) - COALESCE(base_host_wait, 0) AS host_wait_ns
  FROM diff_gpu_op
),
keyed AS (
  SELECT *, 'kernel' AS by, kernel AS key FROM figures
  UNION ALL
  SELECT *, 'op' AS by, cpu_op AS key FROM figures
  UNION ALL
  SELECT *, 'annotation' AS by, annotation AS key FROM figures
  UNION ALL
  SELECT *, 'stream' AS by, stream AS key FROM figures
),
per_step AS (
  SELECT
    {{part}} by, key, step,
    SUM(base_count) AS base_count, SUM(new_count) AS new_count,
    SUM(base_ns) AS base_ns, SUM(new_ns) AS new_ns,
    SUM(gpu_ns) AS gpu_ns, SUM(added_ns) AS added_ns, SUM(removed_ns) AS removed_ns,
    SUM(launch_ns) AS launch_ns, SUM(host_wait_ns) AS host_wait_ns
  FROM keyed
  GROUP BY {{part}} by, key, step
),
-- every paired step for every key: a key absent from a step counts 0 there
every_step AS (
  SELECT {{part k}} k.by, k.key, s.step
  FROM (SELECT DISTINCT {{part}} by, key FROM per_step) k
  JOIN diff_step s ON TRUE {{same_window s k}}
),
filled AS (
  SELECT
    {{part e}} e.by, e.key, e.step,
    COALESCE(p.base_count, 0) AS base_count, COALESCE(p.new_count, 0) AS new_count,
    COALESCE(p.base_ns, 0) AS base_ns, COALESCE(p.new_ns, 0) AS new_ns,
    COALESCE(p.gpu_ns, 0) AS gpu_ns, COALESCE(p.added_ns, 0) AS added_ns,
    COALESCE(p.removed_ns, 0) AS removed_ns, COALESCE(p.launch_ns, 0) AS launch_ns,
    COALESCE(p.host_wait_ns, 0) AS host_wait_ns
  FROM every_step e
  LEFT JOIN per_step p
    ON p.by = e.by AND p.key = e.key AND p.step = e.step {{same_window p e}}
)
SELECT
  {{part}}
  by,
  key,
  SUM(base_count) AS base_count,
  SUM(new_count) AS new_count,
  SUM(base_ns) AS base_ns,
  SUM(new_ns) AS new_ns,
  SUM(new_ns) - SUM(base_ns) AS delta_ns,
  SUM(gpu_ns) AS gpu_ns,
  SUM(added_ns) AS added_ns,
  SUM(removed_ns) AS removed_ns,
  SUM(launch_ns) AS launch_ns,
  SUM(host_wait_ns) AS host_wait_ns,
  COUNT(*) AS steps,
  -- the key's GPU time per step: standard deviation within a run, pooled over both (ns)
  CAST(SQRT((COALESCE(VAR_SAMP(base_ns), 0) + COALESCE(VAR_SAMP(new_ns), 0)) / 2) AS BIGINT)
    AS spread_ns,
  diff_mann_whitney_p(array_agg(base_ns), array_agg(new_ns)) AS p_value,
  diff_mann_whitney_p(array_agg(base_ns), array_agg(new_ns)) < {{param alpha}} AS flagged
FROM filled
GROUP BY {{part}} by, key
