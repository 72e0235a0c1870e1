-- launch: which API call launched which GPU op, one row per GPU op with a launching call.
-- Joined on correlation_id (0 means "none" and never joins); a cudaGraphLaunch fans out to
-- every op of its replay, since all nodes of one replay share its correlation id.
CREATE OR REPLACE VIEW launch AS
SELECT
  {{part g}}
  -- the call's correlation id
  g.correlation_id,
  -- 'runtime' or 'driver'
  a.domain AS api_domain,
  -- API name, e.g. cudaLaunchKernel, cudaGraphLaunch
  a.name AS api_name,
  -- call start, unix ns
  a.ts AS api_ts,
  -- call duration, ns
  a.dur AS api_dur,
  -- calling process and raw thread id
  a.process_id,
  a.thread_id,
  -- the GPU op's kind and name (see gpu_op)
  g.kind,
  g.name,
  -- GPU op start (unix ns) and duration (ns)
  g.ts,
  g.dur,
  g.device_id,
  g.stream_id,
  g.graph_id,
  g.graph_node_id,
  -- from the call's start to the op's start, ns
  g.ts - a.ts AS launch_latency
FROM gpu_op g
JOIN api_call a ON a.correlation_id = g.correlation_id {{same_window a g}}
WHERE g.correlation_id <> 0
