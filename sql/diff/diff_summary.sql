-- diff_summary: the step time of both runs over the paired steps (one row per pairing key:
-- rank, host, ...): totals, the change by cause (see diff_step), the per-step spread, and
-- whether the change is larger than the step-to-step noise (Mann-Whitney across the steps,
-- two-sided, flagged below `--alpha`).
CREATE OR REPLACE VIEW diff_summary AS
SELECT
  {{part}}
  COUNT(*) AS steps,
  SUM(base_ns) AS base_ns,
  SUM(new_ns) AS new_ns,
  SUM(delta_ns) AS delta_ns,
  SUM(gpu_ns) AS gpu_ns,
  SUM(added_ns) AS added_ns,
  SUM(removed_ns) AS removed_ns,
  SUM(launch_ns) AS launch_ns,
  SUM(host_wait_ns) AS host_wait_ns,
  SUM(residual_ns) AS residual_ns,
  -- the step time's standard deviation within a run, pooled over both runs (ns)
  CAST(SQRT((COALESCE(VAR_SAMP(base_ns), 0) + COALESCE(VAR_SAMP(new_ns), 0)) / 2) AS BIGINT)
    AS spread_ns,
  diff_mann_whitney_p(array_agg(base_ns), array_agg(new_ns)) AS p_value,
  diff_mann_whitney_p(array_agg(base_ns), array_agg(new_ns)) < {{param alpha}} AS flagged
FROM diff_step
{{group_by_part}}
