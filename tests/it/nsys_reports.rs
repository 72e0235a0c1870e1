//! Nsight Systems reports for the import tests: the real CloverLeaf fixture, and small
//! reports built with rusqlite in the shape nsys writes (a 3.x and a 2.x schema), plus the
//! parquetdir form of any SQLite report.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Builder, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use rusqlite::types::ValueRef;

/// The real report (see data/README.md).
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nsys/hpcgroup_pipit__perlmutter-cloverleaf-cuda.sqlite")
}

/// The tables of a 3.x report (2024-26), as nsys declares them, with the ENUM_* tables.
pub const SCHEMA_3X: &str = r#"
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE ThreadNames (nameId INTEGER, priority INTEGER, globalTid INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,
  mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER,
  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER,
  staticSharedMemory INTEGER, dynamicSharedMemory INTEGER, localMemoryPerThread INTEGER,
  localMemoryTotal INTEGER, gridId INTEGER, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER, graphNodeId INTEGER,
  memKind INTEGER, memoryOperationType INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER,
  returnValue INTEGER, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, greenContextId INTEGER, streamId INTEGER,
  correlationId INTEGER, globalPid INTEGER, syncType INTEGER, eventId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (start INTEGER, "end" INTEGER, deviceId INTEGER,
  contextId INTEGER, greenContextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, eventId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown'),
  (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device'), (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host'),
  (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device');
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable'),
  (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned'), (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device'),
  (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');
"#;

/// The tables of a 2.x report (2021-22): no eventClass, graphNodeId, greenContextId or
/// NVTX textId columns, no ENUM_* tables, no session start time.
pub const SCHEMA_2X: &str = r#"
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER, shortName INTEGER, launchType INTEGER,
  cacheConfig INTEGER, registersPerThread INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
  blockX INTEGER, blockY INTEGER, blockZ INTEGER, staticSharedMemory INTEGER,
  dynamicSharedMemory INTEGER, localMemoryPerThread INTEGER, localMemoryTotal INTEGER,
  gridId INTEGER, sharedMemoryExecuted INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER, copyKind INTEGER, deprecatedSrcId INTEGER,
  srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
  dstDeviceId INTEGER, dstContextId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, domainId INTEGER);
"#;

/// nsys's process and thread keys: <HW:8><VM:8><PID:24><TID:24>.
pub fn gpid(pid: i64) -> i64 {
    (1 << 48) | (pid << 24)
}

pub fn gtid(pid: i64, tid: i64) -> i64 {
    gpid(pid) | tid
}

/// Build a report at `path` from `schema` and `rows` (SQL statements).
pub fn build(path: &Path, schema: &str, rows: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(schema).unwrap();
    conn.execute_batch(rows).unwrap();
}

/// Two processes (pid 100, 200) whose calls and kernels share correlation ids 1 and 2.
pub fn two_processes() -> String {
    let (a, b) = (gpid(100), gpid(200));
    let (a1, a2, b1) = (gtid(100, 100), gtid(100, 101), gtid(200, 200));
    // pid 300 only calls the API: no window, one warning
    let c1 = gtid(300, 300);
    format!(
        r#"
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cuLaunchKernel'),
  (3, 'void gemm<float>(float*)'), (4, 'gemm'), (5, 'cudaMemcpyAsync_v3020'), (6, 'epoch'),
  (7, 'main'), (8, 'cudaStreamSynchronize_v3020'), (9, 'worker'), (10, 'cudaFutureCall_v99000'),
  (11, 'cudaMemsetAsync_v3020'), (12, 'cudaEventRecord_v3020');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1700000000000000000, '', '');
INSERT INTO PROCESSES VALUES ({a}, 100, 'trainer'), ({b}, 200, 'server');
INSERT INTO ThreadNames VALUES (7, 0, {a1}), (9, 0, {a2});
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 2000, 0, {a1}, 1, 1, 0, NULL), (2100, 2200, 0, {a1}, 2, 5, 0, NULL),
  (2300, 2400, 1, {a2}, 3, 2, 0, NULL), (2500, 9000, 0, {a1}, 4, 8, 0, NULL),
  (2600, 2700, 0, {a1}, 5, 10, 0, NULL), (2800, 2850, 0, {a1}, 6, 11, 0, NULL),
  (2860, 2870, 0, {a1}, 7, 12, 0, NULL),
  (1500, 2500, 0, {b1}, 1, 1, 0, NULL), (100, 200, 0, {c1}, 1, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
  blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, graphNodeId) VALUES
  (3000, 5000, 0, 1, 7, 1, {a}, 3, 4, 32, 4, 2, 1, 128, 1, 1, 1024, 256, NULL),
  (5000, 6000, 0, 1, 7, 3, {a}, NULL, 4, 16, 1, 1, 1, 64, 1, 1, 0, 0, 12884901889),
  (6000, 7000, 0, 1, 7, 3, {a}, NULL, NULL, 16, 1, 1, 1, 64, 1, 1, 0, 0, 12884901890),
  (4000, 4500, 1, 2, 13, 1, {b}, 3, 4, 32, 8, 1, 1, 256, 1, 1, 0, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId)
  VALUES (2150, 2900, 0, 1, 7, 2, {a}, 4096, 1, 0, 2, NULL, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, value, bytes, memKind) VALUES (2900, 2950, 0, 1, 7, 6, {a}, 0, 64, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (3100, 3100, 0, 1, NULL, 7, 7, {a}, 5);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
  (2550, 8900, 0, 1, NULL, 7, 4, {a}, 3, NULL);
INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, textId) VALUES
  (500, 9500, 59, 'step 1', {a1}, NULL), (900, 2050, 60, NULL, {a1}, 6),
  (950, NULL, 59, 'never closed', {a1}, NULL), (960, 960, 34, 'a mark', {a1}, NULL);
"#
    )
}

/// Write every table of the SQLite report at `from` as `<TABLE>.parquet` in `to`, as
/// `nsys export --type parquetdir` does: INTEGER columns Int64, everything else text.
pub fn to_parquetdir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let conn = rusqlite::Connection::open(from).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for table in tables {
        let cols: Vec<(String, bool)> = conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .unwrap()
            .query_map([], |r| {
                Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)? == "INTEGER"))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut ints: Vec<Int64Builder> = cols.iter().map(|_| Int64Builder::new()).collect();
        let mut texts: Vec<StringBuilder> = cols.iter().map(|_| StringBuilder::new()).collect();
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for (i, (_, int)) in cols.iter().enumerate() {
                let v = row.get_ref(i).unwrap();
                if *int {
                    ints[i].append_option(match v {
                        ValueRef::Integer(x) => Some(x),
                        _ => None,
                    });
                } else {
                    match v {
                        ValueRef::Null => texts[i].append_null(),
                        ValueRef::Integer(x) => texts[i].append_value(x.to_string()),
                        ValueRef::Real(x) => texts[i].append_value(x.to_string()),
                        ValueRef::Text(t) | ValueRef::Blob(t) => {
                            texts[i].append_value(String::from_utf8_lossy(t))
                        }
                    }
                }
            }
        }
        let mut fields = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for (i, (name, int)) in cols.iter().enumerate() {
            let ty = if *int {
                DataType::Int64
            } else {
                DataType::Utf8
            };
            fields.push(Field::new(name, ty, true));
            arrays.push(if *int {
                Arc::new(ints[i].finish())
            } else {
                Arc::new(texts[i].finish())
            });
        }
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).unwrap();
        let file = std::fs::File::create(to.join(format!("{table}.parquet"))).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
}
