-- @report kernel_breakdown: GPU time by kernel type, overlaps counted apart
-- Follows HTA's kernel-type breakdown (get_gpu_kernel_breakdown's kernel_type table, with
-- include_memory_kernels=True): the time the GPU spent running only COMPUTATION,
-- only COMMUNICATION, only MEMORY kernels, or several types at once ("COMPUTATION overlapping
-- COMMUNICATION", ...), from _hta_kernel_state. HTA's percentages are over all ranks together;
-- these are per window (per rank).
SELECT
  {{part}}
  -- COMPUTATION, COMMUNICATION, MEMORY, or "A overlapping B [overlapping C]" in that order
  concat_ws(' overlapping ',
    CASE WHEN state & 1 <> 0 THEN 'COMPUTATION' END,
    CASE WHEN state & 2 <> 0 THEN 'COMMUNICATION' END,
    CASE WHEN state & 4 <> 0 THEN 'MEMORY' END) AS kernel_type,
  -- time in that state, ns
  dur AS total_ns,
  -- share of the window's kernel time, percent
  100.0 * dur / SUM(dur) OVER ({{partition_by_part}}) AS pct
FROM _hta_kernel_state
ORDER BY {{part}} total_ns DESC
