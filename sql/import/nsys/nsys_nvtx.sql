-- nsys_nvtx: the NVTX ranges of NVTX_EVENTS (push/pop and start/end, event types 59, 60 and
-- their 70, 71 twins of ENUM_NSYS_EVENT_TYPE) as spans for the window's CPU trace, on the
-- thread that opened them. Marks, domains and ranges never closed are left out.
CREATE OR REPLACE VIEW nsys_nvtx AS
SELECT
  -- the process key the window is cut by
  (e.globalTid >> 24) << 24 AS _global_pid,
  -- OS process and thread ids
  (e.globalTid >> 24) & 16777215 AS pid,
  e.globalTid & 16777215 AS tid,
  -- the range's text (inline `text`, else `textId` through StringIds), '' when neither
  COALESCE(e.text, t.value, '') AS name,
  -- start, unix ns
  e.start + s.epoch_ns AS ts_ns,
  -- duration, ns
  e."end" - e.start AS dur_ns
FROM NVTX_EVENTS e
CROSS JOIN nsys_session s
LEFT JOIN StringIds t ON t.id = e.textId
WHERE e.eventType IN (59, 60, 70, 71) AND e."end" IS NOT NULL AND e."end" >= e.start
