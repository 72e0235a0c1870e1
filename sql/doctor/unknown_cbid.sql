-- @check unknown_cbid severity=warning: API callback ids the compiled-in cbid table does not know, so their calls are named from the window or cbid_<n>
-- One row per unknown (domain, cbid). The table comes from CUPTI 13.0.85's headers; a newer
-- CUPTI adds ids (compare window_info.cbid_table_version), an older or foreign producer may
-- number them differently. Queries that match API names (launch detection in the exporters)
-- miss these calls.
CREATE OR REPLACE VIEW unknown_cbid AS
SELECT
  {{part a}}
  -- 'runtime' or 'driver', and the callback id (NULL when the row has none)
  a.domain, a.cbid,
  -- the name the calls get (the window's own `name`, else cbid_<n>)
  min(a.name) AS name,
  -- calls with this id
  count(*) AS calls
FROM api_call a
LEFT JOIN cbid c ON c.domain = a.domain AND c.cbid = a.cbid
WHERE c.cbid IS NULL
GROUP BY {{part a}} a.domain, a.cbid
