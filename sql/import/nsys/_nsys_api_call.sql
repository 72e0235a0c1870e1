-- _nsys_api_call: each call of _nsys_api with its CUPTI callback id, from its name through
-- tracesql's cbid table of the call's domain (runtime or driver): the exact enumerator name
-- first, else the name without its version suffix (lowest cbid). A name the table lacks gets
-- a NULL cbid and keeps its name in `name`, which the views and exports show for it. The
-- lookup is made once per StringIds entry, for both domains; each call joins it on its
-- name's id (an integer, not two text keys per call) and takes its domain's cbid.
CREATE OR REPLACE VIEW _nsys_api_call AS
SELECT
  -- every column of _nsys_api (process key, domain, names, times, ids)
  a.*,
  -- CUPTI callback id; NULL when the cbid table does not know the name
  CASE WHEN a.domain = 'driver' THEN c.driver_cbid ELSE c.runtime_cbid END AS cbid
FROM _nsys_api a
LEFT JOIN (
  SELECT
    n.id,
    COALESCE(rr.cbid, rs.cbid) AS runtime_cbid,
    COALESCE(dr.cbid, ds.cbid) AS driver_cbid
  FROM (
    SELECT id, value AS raw_name, regexp_replace(value, '_v[0-9]+$', '') AS name FROM StringIds
  ) n
  LEFT JOIN (SELECT raw_name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'runtime' GROUP BY raw_name) rr
    ON rr.raw_name = n.raw_name
  LEFT JOIN (SELECT name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'runtime' GROUP BY name) rs
    ON rs.name = n.name
  LEFT JOIN (SELECT raw_name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'driver' GROUP BY raw_name) dr
    ON dr.raw_name = n.raw_name
  LEFT JOIN (SELECT name, MIN(cbid) AS cbid FROM cbid WHERE domain = 'driver' GROUP BY name) ds
    ON ds.name = n.name
) c ON c.id = a._name_id
