-- @report comm_overlap: how much of the communication time computation overlaps
-- Follows HTA's get_comm_comp_overlap: the time merged COMMUNICATION and COMPUTATION kernels run
-- together, over the merged COMMUNICATION time. NULL when the window has no communication.
WITH comm AS (
  SELECT {{part}} SUM(end_ts - ts) AS comm_ns
  FROM _hta_merged
  WHERE lane = 'COMMUNICATION'
  {{group_by_part}}
),
overlap AS (
  SELECT {{part}} SUM(dur) AS overlap_ns
  FROM _hta_kernel_state
  WHERE state & 3 = 3
  {{group_by_part}}
)
SELECT
  {{part c}}
  -- merged communication time, ns
  c.comm_ns,
  -- the part of it computation overlaps, ns
  COALESCE(o.overlap_ns, 0) AS overlap_ns,
  -- overlap_ns over comm_ns, percent
  100.0 * COALESCE(o.overlap_ns, 0) / NULLIF(c.comm_ns, 0) AS comm_comp_overlap_pct
FROM comm c
LEFT JOIN overlap o ON TRUE {{same_window c o}}
ORDER BY {{part c}} c.comm_ns
