-- _gpu_counter_sample: the counter samples both exports draw, in the reference's merged
-- order (source, spec, row): environment counters (power, temperature, SM and memory clocks,
-- fan: decoded from the union's first 8 bytes) and pm_sampling metrics (chrome_pm_sample,
-- one row per sample and metric, with the reference's friendly labels), for active devices
-- only (every device when none is active).
CREATE OR REPLACE VIEW _gpu_counter_sample AS
SELECT
  -- 0 environment, 1 pm_sampling
  c.src,
  -- the spec within its source (environment: its table order; pm: metric column order)
  c.spec,
  -- row order within the source file
  c.ord,
  -- counter name
  c.name,
  c.device_id,
  -- sample time, unix ns
  c.start_ns,
  c.value
FROM (
  SELECT 0 AS src, 0 AS spec, file_row AS ord, 'Power (W)' AS name, device_id, start_ns,
    CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE) / 1000.0 AS value
  FROM environment
  WHERE environment_kind = 3
  UNION ALL
  SELECT 0, 1, file_row, 'Temperature (C)', device_id, start_ns, CAST(data AS DOUBLE)
  FROM environment
  WHERE environment_kind = 2
  UNION ALL
  SELECT 0, 2, file_row, 'SM Clock (MHz)', device_id, start_ns,
    CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE)
  FROM environment
  WHERE environment_kind = 1
  UNION ALL
  SELECT 0, 3, file_row, 'Memory Clock (MHz)', device_id, start_ns, CAST(data >> 32 AS DOUBLE)
  FROM environment
  WHERE environment_kind = 1
  UNION ALL
  SELECT 0, 4, file_row, 'Fan Speed (%)', device_id, start_ns, CAST(data AS DOUBLE)
  FROM environment
  WHERE environment_kind = 4
  UNION ALL
  SELECT 1, p.metric_index, p.ord,
    CASE
      WHEN l.label IS NULL THEN p.metric
      WHEN strpos(p.metric, '.') > 0
       AND strpos(substr(p.metric, strpos(p.metric, '.') + 1), 'pct_of_peak') > 0
        THEN concat(l.label, ' (%)')
      ELSE l.label
    END,
    p.device_id, p.start_ns, p.value
  FROM chrome_pm_sample p
  LEFT JOIN (VALUES
    ('sm__cycles_active', 'SM Active'),
    ('gpu__dram_throughput', 'DRAM BW'),
    ('dram__throughput', 'HBM BW'),
    ('dram__read_throughput', 'HBM Read'),
    ('dram__write_throughput', 'HBM Write'),
    ('nvlrx__bytes', 'NVLink RX'),
    ('nvltx__bytes', 'NVLink TX'),
    ('pcie__throughput', 'PCIe')
  ) AS l(base, label) ON l.base = split_part(p.metric, '.', 1)
) c
CROSS JOIN (SELECT count(*) AS n FROM _chrome_active_device) ad
LEFT JOIN _chrome_active_device a ON a.device_id = c.device_id
WHERE ad.n = 0 OR a.device_id IS NOT NULL
