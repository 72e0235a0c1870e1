-- _nsys_api_call: each call of _nsys_api with its CUPTI callback id, from its name through
-- tracesql's cbid table of the call's domain (runtime or driver): the exact enumerator name
-- first, else the name without its version suffix (lowest cbid). A name the table lacks gets
-- a NULL cbid and keeps its name in `name`, which the views and exports show for it.
CREATE OR REPLACE VIEW _nsys_api_call AS
SELECT
  -- every column of _nsys_api (process key, domain, names, times, ids)
  a.*,
  -- CUPTI callback id; NULL when the cbid table does not know the name
  COALESCE(raw.cbid, short.cbid) AS cbid
FROM _nsys_api a
LEFT JOIN (SELECT domain, raw_name, MIN(cbid) AS cbid FROM cbid GROUP BY domain, raw_name) raw
  ON raw.domain = a.domain AND raw.raw_name = a.raw_name
LEFT JOIN (SELECT domain, name, MIN(cbid) AS cbid FROM cbid GROUP BY domain, name) short
  ON short.domain = a.domain AND short.name = a.name
