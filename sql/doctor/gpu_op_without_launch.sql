-- @check gpu_op_without_launch severity=warning: eager GPU ops with no launching API call, so launch and cpu_launch leave them out
-- An eager op (graph_id 0) is launched by one runtime or driver call with its correlation id.
-- Without it the op has no launch latency, no CPU operator and no flow arrow. A few at the
-- window's start are expected: their call fell into the previous window (calls and ops are
-- bucketed by their own start). Many mean the API domains were not collected.
CREATE OR REPLACE VIEW gpu_op_without_launch AS
SELECT
  {{part}}
  -- see gpu_op
  ts, kind, name, dur, device_id, stream_id,
  -- the correlation id no API call has (0: the op had none)
  correlation_id
FROM _unlaunched_gpu_op
WHERE graph_id = 0
