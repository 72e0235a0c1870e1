-- _cp_gpu_op: the GPU side of the critical path's graph: every GPU op with the API call that
-- launched it, and the length of its stream's queue at the call and at the op's start (HTA's
-- queue length: +1 when a kernel, copy or set launch call starts, -1 when its op starts, on
-- the op's stream; at one instant an op's start counts before a launch).
CREATE OR REPLACE VIEW _cp_gpu_op AS
WITH launched AS (
  SELECT *,
    api_name IN ('cudaLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernel', 'cuLaunchKernelEx',
      'cudaMemcpyAsync', 'cudaMemsetAsync', 'hipLaunchKernel', 'hipExtModuleLaunchKernel',
      'hipMemcpyAsync', 'hipMemsetAsync', 'hipMemcpyWithStream') AS queued
  FROM launch
),
queue_step AS (
  SELECT {{part}} device_id, stream_id, correlation_id, ts AS op_ts, api_ts AS t, 1 AS delta
  FROM launched WHERE queued
  UNION ALL
  SELECT {{part}} device_id, stream_id, correlation_id, ts AS op_ts, ts AS t, -1 AS delta
  FROM launched WHERE queued
),
queue AS (
  SELECT {{part}} device_id, stream_id, correlation_id, op_ts, delta,
    SUM(delta) OVER (PARTITION BY {{part}} device_id, stream_id
      ORDER BY t, delta, correlation_id ROWS UNBOUNDED PRECEDING) AS length
  FROM queue_step
),
-- each op's two rows of the queue side by side: its call's and its start's (one pass over the
-- queue; as two joins, the planner computed the queue once for each)
queue_length AS (
  SELECT {{part}} device_id, stream_id, correlation_id, op_ts,
    MAX(CASE WHEN delta = 1 THEN length END) AS at_call,
    MAX(CASE WHEN delta = -1 THEN length END) AS at_start
  FROM queue
  GROUP BY {{part}} device_id, stream_id, correlation_id, op_ts
)
SELECT
  {{part l}}
  -- see gpu_op
  l.kind, l.name, l.ts, l.ts + l.dur AS end_ts, l.device_id, l.stream_id, l.correlation_id,
  l.graph_id,
  -- the launching call: name, start and end (unix ns), process and raw thread id
  l.api_name, l.api_ts, l.api_ts + l.api_dur AS api_end_ts, l.process_id, l.thread_id,
  -- the stream's queue length at the call, with this op (NULL for calls that do not queue)
  q.at_call AS queue_at_call,
  -- the stream's queue length once this op started
  q.at_start AS queue_at_start
FROM launched l
LEFT JOIN queue_length q ON q.device_id = l.device_id AND q.stream_id = l.stream_id
  AND q.correlation_id = l.correlation_id AND q.op_ts = l.ts {{same_window q l}}
