-- nsys_thread: thread names (ThreadNames through StringIds) for the CPU trace's metadata.
CREATE OR REPLACE VIEW nsys_thread AS
SELECT
  -- the process key the window is cut by
  (t.globalTid >> 24) << 24 AS _global_pid,
  -- OS process and thread ids
  (t.globalTid >> 24) & 16777215 AS pid,
  t.globalTid & 16777215 AS tid,
  -- the thread's name
  MAX(n.value) AS name
FROM ThreadNames t
JOIN StringIds n ON n.id = t.nameId
GROUP BY t.globalTid
