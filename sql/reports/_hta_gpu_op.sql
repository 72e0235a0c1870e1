-- _hta_gpu_op: the GPU events HolisticTraceAnalysis (HTA) analyzes, each with HTA's kernel type.
-- HTA takes every trace event with an integer `stream` argument other than -1: the GPU ops
-- (gpu_op) and the synchronizations (cuda_sync); Kineto writes the stream of a device-wide
-- sync as 4294967295, so HTA counts those too, and so does this view. Its kernel type follows the name (hta/utils/utils.py, get_kernel_type):
-- `^nccl.*Kernel` is COMMUNICATION; `^Memcpy|^Memset|^dma` (and every memcpy and memset op) is
-- MEMORY; a name with none of `^nccl.*Kernel`, `Memcpy`, a leading `Memset`, `Sync` is
-- COMPUTATION; the rest (syncs, "...Memcpy..." kernels, graph event-record and host nodes,
-- which Kineto traces do not carry) is OTHER.
CREATE OR REPLACE VIEW _hta_gpu_op AS
SELECT
  {{part}}
  -- gpu_op's kind, or 'cuda_sync'
  kind,
  -- display name (syncs named as Kineto names them)
  name,
  -- start and end, unix ns
  ts,
  ts + dur AS end_ts,
  -- device ordinal (NULL for syncs), stream, correlation id of the call that issued it
  device_id,
  stream_id,
  correlation_id,
  -- COMMUNICATION, MEMORY, COMPUTATION or OTHER
  CASE
    WHEN kind IN ('gpu_memcpy', 'gpu_memset') THEN 'MEMORY'
    WHEN kind <> 'kernel' THEN 'OTHER'
    -- HTA's regular expressions spelled as prefix and substring tests, which are several
    -- times cheaper per row: `^nccl.*Kernel`, `^(Memcpy|Memset|dma)`, `^(.*Memcpy|Memset|.*Sync)`
    WHEN starts_with(name, 'nccl') AND strpos(substr(name, 5), 'Kernel') > 0 THEN 'COMMUNICATION'
    WHEN starts_with(name, 'Memcpy') OR starts_with(name, 'Memset') OR starts_with(name, 'dma') THEN 'MEMORY'
    WHEN strpos(name, 'Memcpy') > 0 OR strpos(name, 'Sync') > 0 THEN 'OTHER'
    ELSE 'COMPUTATION'
  END AS kernel_type
FROM gpu_op
UNION ALL
SELECT
  {{part}}
  'cuda_sync',
  CASE sync_type
    WHEN 1 THEN 'Event Sync'
    WHEN 2 THEN 'Stream Wait Event'
    WHEN 3 THEN 'Stream Sync'
    WHEN 4 THEN 'Context Sync'
    ELSE 'Unknown'
  END,
  start_ns,
  end_ns,
  CAST(NULL AS BIGINT),
  stream_id,
  correlation_id,
  -- by HTA's name rule: "Stream Wait Event" has no "Sync" in it
  CASE WHEN sync_type = 2 THEN 'COMPUTATION' ELSE 'OTHER' END
FROM cuda_sync
