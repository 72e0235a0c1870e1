-- @report comm_overlap: how much of the communication time computation overlaps
-- Follows HTA's get_comm_comp_overlap: the time merged COMMUNICATION and COMPUTATION kernels run
-- together, over the merged COMMUNICATION time. NULL when the window has no communication.
-- Both come from the sweep of _hta_kernel_state: the merged communication time is the time
-- its bit is set.
WITH sums AS (
  SELECT {{part}}
    SUM(dur) FILTER (WHERE state & 2 <> 0) AS comm_ns,
    SUM(dur) FILTER (WHERE state & 3 = 3) AS overlap_ns
  FROM _hta_kernel_state
  {{group_by_part}}
)
SELECT
  {{part}}
  -- merged communication time, ns
  comm_ns,
  -- the part of it computation overlaps, ns
  COALESCE(overlap_ns, 0) AS overlap_ns,
  -- overlap_ns over comm_ns, percent
  100.0 * COALESCE(overlap_ns, 0) / NULLIF(comm_ns, 0) AS comm_comp_overlap_pct
FROM sums
ORDER BY {{part}} comm_ns
