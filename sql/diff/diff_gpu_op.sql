-- diff_gpu_op: the kernels, copies and sets of the paired steps, BASE's and NEW's side by
-- side. Steps pair by number (`--steps` picks some); within a step, work pairs by kind,
-- issuing CPU op, normalized kernel name and place (`nth`, see _diff_gpu_work). `change`:
-- 'paired', 'added' (NEW only) or 'removed' (BASE only).
CREATE OR REPLACE VIEW diff_gpu_op AS
WITH paired_step AS (
  SELECT {{part b}} b.step
  FROM (SELECT * FROM _diff_step WHERE run = 'base' AND {{param steps}}) b
  JOIN _diff_step n ON n.step = b.step {{same_window n b}}
  WHERE n.run = 'new'
),
b AS (
  SELECT w.* FROM _diff_gpu_work w JOIN paired_step s ON s.step = w.step {{same_window s w}}
  WHERE w.run = 'base'
),
n AS (
  SELECT w.* FROM _diff_gpu_work w JOIN paired_step s ON s.step = w.step {{same_window s w}}
  WHERE w.run = 'new'
)
SELECT
  {{coalesce_part b n}}
  COALESCE(b.step, n.step) AS step,
  COALESCE(b.kind, n.kind) AS kind,
  COALESCE(b.cpu_op, n.cpu_op) AS cpu_op,
  COALESCE(b.kernel, n.kernel) AS kernel,
  COALESCE(b.nth, n.nth) AS nth,
  CASE WHEN b.kind IS NULL THEN 'added' WHEN n.kind IS NULL THEN 'removed' ELSE 'paired' END
    AS change,
  -- each run's op: name as recorded, innermost annotated range, stream, start (unix ns), duration (ns), the launching
  -- call's CPU time and the host wait before it (ns, see _diff_gpu_work); NULL when absent
  b.name AS base_name,
  n.name AS new_name,
  b.annotation AS base_annotation,
  n.annotation AS new_annotation,
  b.stream_id AS base_stream_id,
  n.stream_id AS new_stream_id,
  b.ts AS base_ts,
  n.ts AS new_ts,
  b.dur AS base_dur,
  n.dur AS new_dur,
  b.call_dur AS base_call_dur,
  n.call_dur AS new_call_dur,
  b.host_wait AS base_host_wait,
  n.host_wait AS new_host_wait
FROM b
FULL JOIN n
  ON n.step = b.step AND n.kind = b.kind AND n.cpu_op = b.cpu_op AND n.kernel = b.kernel
  AND n.nth = b.nth {{same_window n b}}
