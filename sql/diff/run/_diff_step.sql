-- _diff_step: each run's steps: the CPU spans named like the step pattern (`--step-name`,
-- default ProfilerStep#%), numbered from 1 in start order within each run and pairing key
-- (the partition columns but window_id). A run without such a span is one step, from its
-- first to its last GPU op or API call.
CREATE OR REPLACE VIEW _diff_step AS
WITH marked AS (
  SELECT {{pair}} name, ts_ns AS ts, dur_ns AS dur
  FROM cpu_event
  WHERE ph = 'X'
    AND name LIKE {{param step_name}}
    AND cat IS DISTINCT FROM 'gpu_user_annotation'
),
activity AS (
  SELECT {{pair}} ts, dur FROM gpu_op
  UNION ALL
  SELECT {{pair}} ts, dur FROM api_call
),
whole AS (
  SELECT {{pair}} '(whole run)' AS name, MIN(ts) AS ts, MAX(ts + dur) - MIN(ts) AS dur
  FROM activity
  {{group_by_pair}}
),
step AS (
  SELECT * FROM marked
  UNION ALL
  SELECT w.* FROM whole w LEFT ANTI JOIN marked m ON TRUE {{same_pair w m}}
)
SELECT
  {{pair}}
  -- the step's number in its run, from 1
  ROW_NUMBER() OVER ({{partition_by_pair}} ORDER BY ts, dur) AS step,
  name AS step_name,
  -- the span: start and end (unix ns), duration (ns)
  ts AS step_ts,
  ts + dur AS step_end,
  dur AS step_dur
FROM step
