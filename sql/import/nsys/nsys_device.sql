-- nsys_device: TARGET_INFO_GPU as the CPU trace's `deviceProperties`, one row per GPU id,
-- under the keys Kineto writes (so exports show the same device rows for both importers).
-- Each column becomes one JSON member; NULL columns are left out.
CREATE OR REPLACE VIEW nsys_device AS
SELECT
  -- device id, as the activity tables' deviceId
  g.id,
  -- product name
  MAX(g.name) AS name,
  -- global memory, bytes
  MAX(g.totalMemory) AS "totalGlobalMem",
  -- compute capability
  MAX(g.computeMajor) AS "computeMajor",
  MAX(g.computeMinor) AS "computeMinor",
  -- limits per block and per SM
  MAX(g.maxThreadsPerBlock) AS "maxThreadsPerBlock",
  MAX(g.maxWarpsPerSm * g.threadsPerWarp) AS "maxThreadsPerMultiprocessor",
  MAX(g.maxRegistersPerBlock) AS "regsPerBlock",
  MAX(g.maxRegistersPerSm) AS "regsPerMultiprocessor",
  -- threads per warp
  MAX(g.threadsPerWarp) AS "warpSize",
  -- shared memory, bytes
  MAX(g.maxShmemPerBlock) AS "sharedMemPerBlock",
  MAX(g.maxShmemPerSm) AS "sharedMemPerMultiprocessor",
  -- streaming multiprocessors
  MAX(g.smCount) AS "numSms",
  MAX(g.maxShmemPerBlockOptin) AS "sharedMemPerBlockOptin"
FROM TARGET_INFO_GPU g
GROUP BY g.id
