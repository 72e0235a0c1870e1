-- @check row_order_unclaimed severity=info: GPU activity files that do not claim each stream's rows in time order, so queries ordered by stream and time sort them
-- Our writers and importers check the order of the rows they write and claim it in the file
-- (key `tracesql.row_order`, docs/engine.md "Known order"); the engine then orders by stream
-- and time in one pass. A file from another producer, or one whose rows went back in time on a
-- stream, claims nothing: its answers are the same, only those queries sort.
CREATE OR REPLACE VIEW row_order_unclaimed AS
SELECT
  {{part}}
  table_name, file
FROM row_order
WHERE NOT claimed
