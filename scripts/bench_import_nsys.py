"""Helper of scripts/bench-import-nsys.sh.

    python bench_import_nsys.py make REPORT.sqlite KERNELS       a synthetic 3.x nsys report
    python bench_import_nsys.py python REPORT.sqlite             sqlite3 -> pyarrow, timed

The report: one process, KERNELS kernels on 4 streams, each launched by its own
cudaLaunchKernel runtime call (same correlation id), 50 kernel names, 5,000 NVTX ranges,
the process and thread names and the session start. The schema is tests/it/nsys_reports.rs's
3.x one (the tables nsys declares, including empty MEMCPY/MEMSET/SYNC/EVENT tables).
"""

import os
import re
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PID = 4242
GPID = (1 << 48) | (PID << 24)
GTID = GPID | PID


def schema_3x():
    text = open(os.path.join(HERE, "..", "tests", "it", "nsys_reports.rs")).read()
    m = re.search(r'pub const SCHEMA_3X: &str = r#"(.*?)"#;', text, re.S)
    return m.group(1)


def make(path, kernels):
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.executescript(schema_3x())
    strings = [(1, "cudaLaunchKernel_v7000"), (2, "step"), (3, "main")]
    strings += [(100 + i, f"void kernel_{i}<float, {i % 7}>(float*, float const*, int)") for i in range(50)]
    strings += [(200 + i, f"kernel_{i}") for i in range(50)]
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", strings)
    db.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '')")
    db.execute("INSERT INTO PROCESSES VALUES (?, ?, 'trainer')", (GPID, PID))
    db.execute("INSERT INTO ThreadNames VALUES (3, 0, ?)", (GTID,))
    n = kernels - 1
    db.execute(
        f"""WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n})
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME  -- eventClass 0: the runtime domain
        SELECT 1000000 + i * 2000, 1000000 + i * 2000 + 700, 0, {GTID}, i + 1, 1, 0, NULL FROM c"""
    )
    db.execute(
        f"""WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < {n})
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId,
          correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY,
          gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, graphNodeId)
        SELECT 1000000 + i * 2000 + 900, 1000000 + i * 2000 + 900 + 500 + (i % 13) * 100, 0, 1,
          7 + (i % 4), i + 1, {GPID}, 100 + (i % 50), 200 + (i % 50), 32 + (i % 3) * 8,
          1 + (i % 1024), 1, 1, 128 << (i % 3), 1, 1, (i % 5) * 1024, (i % 2) * 4096, NULL FROM c"""
    )
    step = max(1, kernels * 2000 // 5000)
    db.execute(
        f"""WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 4999)
        INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, textId)
        SELECT 1000000 + i * {step}, 1000000 + i * {step} + {step // 2}, 59, NULL, {GTID}, 2 FROM c"""
    )
    db.commit()
    db.close()


# The columns `tracesql import nsys` reads (src/import/nsys/source.rs) of the tables this
# report fills.
TABLES = {
    "StringIds": "id, value",
    "CUPTI_ACTIVITY_KIND_KERNEL": 'start, "end", deviceId, contextId, streamId, correlationId, '
    "globalPid, demangledName, shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, "
    "registersPerThread, staticSharedMemory, dynamicSharedMemory, graphNodeId",
    "CUPTI_ACTIVITY_KIND_RUNTIME": 'start, "end", globalTid, correlationId, nameId, eventClass',
    "NVTX_EVENTS": 'start, "end", eventType, text, textId, globalTid',
    "ThreadNames": "nameId, globalTid",
    "PROCESSES": "globalPid, pid, name",
    "TARGET_INFO_SESSION_START_TIME": "utcEpochNs",
}


def python_read(path):
    """Read the tables into pyarrow Tables with sqlite3; print seconds and rows."""
    import pyarrow as pa

    t0 = time.perf_counter()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = 0
    tables = {}
    for table, cols in TABLES.items():
        cur = db.execute(f"SELECT {cols} FROM {table}")
        names = [d[0] for d in cur.description]
        data = cur.fetchall()
        columns = list(zip(*data)) if data else [[] for _ in names]
        tables[table] = pa.table({n: pa.array(c) for n, c in zip(names, columns)})
        rows += len(data)
        del data, columns
    seconds = time.perf_counter() - t0
    print(f"{seconds:.3f} {rows}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    else:
        python_read(sys.argv[2])
