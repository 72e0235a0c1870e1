-- _chrome_active_device: devices that ran GPU work in the window (a kernel, memcpy or
-- memset); counters are drawn only for these (for every device when there are none).
CREATE OR REPLACE VIEW _chrome_active_device AS
SELECT DISTINCT
  -- device ordinal
  device_id
FROM gpu_op
WHERE kind IN ('kernel', 'gpu_memcpy', 'gpu_memset')
