-- _hta_kernel_state: how long the GPU spent in each combination of running kernel types, as
-- HTA's kernel-type breakdown sweeps it (_get_gpu_kernel_type_time): the busy pieces of
-- COMPUTATION (bit 1), COMMUNICATION (bit 2) and MEMORY (bit 4) add their bit where they start
-- and remove it where they end; the running sum is the state until the next edge.
CREATE OR REPLACE VIEW _hta_kernel_state AS
WITH typed AS (
  SELECT {{part}} ts, end_ts,
    CASE lane WHEN 'COMPUTATION' THEN 1 WHEN 'COMMUNICATION' THEN 2 ELSE 4 END AS bit
  FROM _hta_merged
  WHERE lane IN ('COMPUTATION', 'COMMUNICATION', 'MEMORY')
),
edges AS (
  SELECT {{part}} t, SUM(delta) AS delta
  FROM (
    SELECT {{part}} ts AS t, bit AS delta FROM typed
    UNION ALL
    SELECT {{part}} end_ts, -bit FROM typed
  )
  GROUP BY {{part}} t
),
swept AS (
  SELECT {{part}} t,
    SUM(delta) OVER ({{partition_by_part}} ORDER BY t ROWS UNBOUNDED PRECEDING) AS state,
    LEAD(t) OVER ({{partition_by_part}} ORDER BY t) AS next_t
  FROM edges
)
SELECT
  {{part}}
  -- bit set of the kernel types running: 1 COMPUTATION, 2 COMMUNICATION, 4 MEMORY
  state,
  -- time spent in that state, ns
  SUM(next_t - t) AS dur
FROM swept
WHERE state > 0 AND next_t IS NOT NULL
GROUP BY {{part}} state
