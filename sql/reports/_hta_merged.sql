-- _hta_merged: the GPU's busy intervals, merged so that none overlap, per kernel type and for
-- all types together (`lane` = 'ALL'), as HTA's merge_kernel_intervals computes them: sorted
-- by start, an interval opens a new group when it starts after every earlier interval ended
-- (touching intervals merge). Each group becomes one interval [min start, max end].
CREATE OR REPLACE VIEW _hta_merged AS
WITH typed AS (
  SELECT {{part}} kernel_type AS lane, ts, end_ts FROM _hta_gpu_op
  UNION ALL
  SELECT {{part}} 'ALL', ts, end_ts FROM _hta_gpu_op
),
marked AS (
  SELECT *,
    CASE WHEN ts > MAX(end_ts) OVER (
      PARTITION BY {{part}} lane ORDER BY ts, end_ts
      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) THEN 1 ELSE 0 END AS opens_group
  FROM typed
),
grouped AS (
  SELECT *,
    SUM(opens_group) OVER (
      PARTITION BY {{part}} lane ORDER BY ts, end_ts ROWS UNBOUNDED PRECEDING) AS merged_group
  FROM marked
)
SELECT
  {{part}}
  -- a kernel type of _hta_gpu_op, or 'ALL'
  lane,
  -- the merged interval, unix ns
  MIN(ts) AS ts,
  MAX(end_ts) AS end_ts
FROM grouped
GROUP BY {{part}} lane, merged_group
