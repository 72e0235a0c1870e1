-- chrome_counter: Chrome `C` counter samples of environment (power, temperature, SM and
-- memory clocks, fan: decoded from the union's first 8 bytes) and pm_sampling metrics
-- (chrome_pm_sample, one row per sample and metric, named with the reference's friendly
-- labels), on a per-device "GPU <n> Counters" process, for active devices only.
CREATE OR REPLACE VIEW chrome_counter AS
SELECT
  -- counter event
  'C' AS ph,
  -- counter name
  c.name,
  -- the device's counter process (a string pid)
  concat('GPU ', CAST(c.device_id AS VARCHAR), ' Counters') AS pid,
  -- sample time, µs (not clamped)
  CAST(c.start_ns - b.base_ns AS DOUBLE) / 1000.0 AS ts,
  -- the sample as one unnamed series
  c.value AS "args."
FROM (
  SELECT 'Power (W)' AS name, device_id, start_ns,
    CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE) / 1000.0 AS value
  FROM environment WHERE environment_kind = 3
  UNION ALL
  SELECT 'Temperature (C)', device_id, start_ns, CAST(data AS DOUBLE)
  FROM environment WHERE environment_kind = 2
  UNION ALL
  SELECT 'SM Clock (MHz)', device_id, start_ns,
    CAST(data & CAST(4294967295 AS BIGINT UNSIGNED) AS DOUBLE)
  FROM environment WHERE environment_kind = 1
  UNION ALL
  SELECT 'Memory Clock (MHz)', device_id, start_ns, CAST(data >> 32 AS DOUBLE)
  FROM environment WHERE environment_kind = 1
  UNION ALL
  SELECT 'Fan Speed (%)', device_id, start_ns, CAST(data AS DOUBLE)
  FROM environment WHERE environment_kind = 4
  UNION ALL
  SELECT
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
CROSS JOIN chrome_base b
CROSS JOIN (SELECT count(*) AS n FROM _chrome_active_device) ad
LEFT JOIN _chrome_active_device a ON a.device_id = c.device_id
WHERE ad.n = 0 OR a.device_id IS NOT NULL
