-- @export chrome section=events order=13
-- chrome_counter_process: the sort index that floats each device's "GPU <n> Counters"
-- process above the CPU and GPU rows, for every device with counter samples.
CREATE OR REPLACE VIEW chrome_counter_process AS
SELECT
  -- metadata event
  'M' AS ph,
  'process_sort_index' AS name,
  0.0 AS ts,
  -- the counter process
  concat('GPU ', CAST(device_id AS VARCHAR), ' Counters') AS pid,
  0 AS tid,
  -- 100 + device ordinal
  100 + device_id AS "args.sort_index"
FROM (
  SELECT DISTINCT device_id FROM (
    SELECT CAST(split_part(pid, ' ', 2) AS BIGINT) AS device_id FROM chrome_counter
    UNION ALL
    SELECT CAST(split_part(pid, ' ', 2) AS BIGINT) FROM chrome_cycle_counter
  )
)
