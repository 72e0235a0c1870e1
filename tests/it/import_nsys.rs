//! `tracesql import nsys`: the real CloverLeaf report (tests/fixtures/nsys) and small reports
//! built with rusqlite (nsys_reports: a 2.x schema, several processes with colliding
//! correlation ids, NULL names, empty tables, graph nodes, text that is not UTF-8, a
//! parquetdir export of the same content) become windows that query, join and export. Bad
//! reports are import_nsys_faults' concern.

use std::path::Path;
use std::process::{Command, Output};

use prost::Message;
use tracesql::sink::perfetto::proto::TracePacket;

use crate::nsys_reports::{
    build, fixture, gpid, gtid, to_parquetdir, two_processes, SCHEMA_2X, SCHEMA_3X,
};
use crate::support::{open, rows};

fn tracesql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

fn import(reports: &[&Path], output: &Path) -> Output {
    let mut args: Vec<&str> = vec!["import", "nsys"];
    args.extend(reports.iter().map(|p| p.to_str().unwrap()));
    args.extend(["--output", output.to_str().unwrap()]);
    tracesql(&args)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn imported(reports: &[&Path], output: &Path) -> String {
    let out = import(reports, output);
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

#[tokio::test]
async fn the_real_report_gives_1312_kernels_that_launches_join() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join("w");
    let log = imported(&[&fixture()], &w);
    assert!(log.contains("1312 kernels, 279 memcpys"), "{log}");
    let ctx = open(&w).await;
    assert_eq!(rows(&ctx, "SELECT count(*) FROM kernel").await, ["1312"]);
    assert_eq!(
        rows(
            &ctx,
            "SELECT api_name, kind, count(*) FROM launch GROUP BY 1, 2 ORDER BY 1"
        )
        .await,
        ["cudaLaunchKernel|kernel|1312", "cudaMemcpy|gpu_memcpy|279"]
    );
    // the one eventClass-1 row is the driver's; every name has a cbid
    assert_eq!(
        rows(
            &ctx,
            "SELECT domain, name, cbid, count(*) FROM api_call GROUP BY 1, 2, 3 ORDER BY 4 DESC, 2"
        )
        .await,
        [
            "runtime|cudaDeviceSynchronize|165|1312",
            "runtime|cudaLaunchKernel|211|1312",
            "runtime|cudaMemcpy|31|279",
            "runtime|cudaMalloc|20|76",
            "runtime|cudaFree|22|68",
            "driver|cuModuleGetLoadingMode|673|1",
        ]
    );
    // session start 1696392839587175550 + the first kernel's start 533338240 (sqlite3 CLI)
    assert_eq!(
        rows(&ctx, "SELECT min(ts), min(process_id) FROM api_call").await[0]
            .split('|')
            .nth(1),
        Some("1701896")
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT start_ns - 1696392839587175550, copy_kind, src_kind, dst_kind FROM gpu_memcpy \
             ORDER BY start_ns LIMIT 1"
        )
        .await,
        ["537713204|1|1|3"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT min(start_ns) - 1696392839587175550 FROM kernel"
        )
        .await,
        ["533338240"]
    );
}

fn gunzip_if(bytes: Vec<u8>) -> Vec<u8> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(&bytes[..]), &mut out)
            .unwrap();
        out
    } else {
        bytes
    }
}

#[test]
fn the_real_report_exports_to_chrome_and_pftrace_with_flows() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tmp.path().join("w");
    imported(&[&fixture()], &w);
    let json = tmp.path().join("t.json.gz");
    let out = tracesql(&[
        "export",
        "-w",
        w.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value =
        serde_json::from_slice(&gunzip_if(std::fs::read(&json).unwrap())).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let count = |ph: &str, cat: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && e["cat"] == cat)
            .count()
    };
    assert_eq!(count("X", "kernel"), 1312);
    assert_eq!(count("X", "gpu_memcpy"), 279);
    // every kernel and copy ends a launch flow
    assert_eq!(count("f", "ac2g"), 1312 + 279);
    assert!(count("s", "ac2g") >= 1312 + 279);
    assert_eq!(doc["deviceProperties"][0]["name"], "NVIDIA A100-SXM4-80GB");
    assert!(events
        .iter()
        .any(|e| e["name"] == "process_name" && e["args"]["name"] == "cuda-cloverleaf"));

    let pf = tmp.path().join("t.pftrace");
    let out = tracesql(&[
        "export",
        "-w",
        w.to_str().unwrap(),
        "-o",
        pf.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let bytes = gunzip_if(std::fs::read(&pf).unwrap());
    let mut buf = &bytes[..];
    let (mut kernels_named, mut correlated) = (0, 0);
    while !buf.is_empty() {
        // Trace { repeated TracePacket packet = 1; }: tag 0x0a, varint length, payload
        assert_eq!(buf[0], 0x0a);
        buf = &buf[1..];
        let len = prost::encoding::decode_varint(&mut buf).unwrap() as usize;
        let packet = TracePacket::decode(&buf[..len]).unwrap();
        buf = &buf[len..];
        if let Some(ev) = &packet.track_event {
            if ev
                .gpu_correlation
                .as_ref()
                .is_some_and(|c| !c.render_stage_submission_event_ids.is_empty())
            {
                correlated += 1;
            }
        }
        if format!("{packet:?}").contains("par_ranged2d_kernel") {
            kernels_named += 1;
        }
    }
    assert!(kernels_named > 0, "no kernel name in the .pftrace");
    // the launch calls point at their GPU work (the .pftrace form of a flow)
    assert!(
        correlated >= 1312 + 279,
        "{correlated} correlated API slices"
    );
}

#[tokio::test]
async fn processes_become_an_archive_and_correlation_ids_never_join_across_them() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("run 1.sqlite");
    build(&report, SCHEMA_3X, &two_processes());
    let archive = tmp.path().join("a");
    let log = imported(&[&report], &archive);
    assert!(log.contains("wrote 2 windows"), "{log}");
    for pid in [100, 200] {
        assert!(archive
            .join(format!(
                "report=run_1/process={pid}/window_id=000001/kernel.parquet"
            ))
            .is_file());
    }
    let ctx = open(&archive).await;
    // correlation 1 exists in both processes: one launch each, never four
    assert_eq!(
        rows(
            &ctx,
            "SELECT process, correlation_id, api_name, kind, count(*) FROM launch \
             GROUP BY 1, 2, 3, 4 ORDER BY 1, 2"
        )
        .await,
        [
            "100|1|cudaLaunchKernel|kernel|1",
            "100|2|cudaMemcpyAsync|gpu_memcpy|1",
            "100|3|cuLaunchKernel|kernel|2",
            "100|6|cudaMemsetAsync|gpu_memset|1",
            "200|1|cudaLaunchKernel|kernel|1",
        ]
    );
    // names: demangled, else short, else ''; graph nodes keep CUPTI's id and its graph
    assert_eq!(
        rows(
            &ctx,
            "SELECT name, graph_id, graph_node_id, static_shared_memory, dynamic_shared_memory, \
             start_ns - 1700000000000000000 FROM kernel WHERE process = 100 ORDER BY start_ns"
        )
        .await,
        [
            "void gemm<float>(float*)|0|0|1024|256|3000",
            "gemm|3|12884901889|0|0|5000",
            "|3|12884901890|0|0|6000",
        ]
    );
    // nsys memory kinds (pageable 0, device 2) become CUPTI's (1, 3)
    assert_eq!(
        rows(
            &ctx,
            "SELECT copy_kind, src_kind, dst_kind, bytes, dst_device_id FROM gpu_memcpy"
        )
        .await,
        ["1|1|3|4096|0"]
    );
    // the memset's device memory kind (nsys 2) is CUPTI's 3; the event record keeps its id
    assert_eq!(
        rows(&ctx, "SELECT memory_kind, bytes, value FROM gpu_memset").await,
        ["3|64|0"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT correlation_id, event_id, stream_id, start_ns - 1700000000000000000, \
             cuda_event_sync_id FROM cuda_event"
        )
        .await,
        ["7|5|7|3100|0"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT sync_type, stream_id, cuda_event_id FROM cuda_sync"
        )
        .await,
        ["3|7|4294967295"]
    );
    // driver by eventClass, thread ids decoded from globalTid
    assert_eq!(
        rows(
            &ctx,
            "SELECT domain, name, process_id, thread_id FROM api_call WHERE correlation_id = 3"
        )
        .await,
        ["driver|cuLaunchKernel|100|101"]
    );
    // a name the cbid table lacks stays what queries show
    assert_eq!(
        rows(
            &ctx,
            "SELECT cbid IS NULL, name FROM api_call WHERE correlation_id = 5"
        )
        .await,
        ["true|cudaFutureCall"]
    );
    assert!(
        log.contains("1 API calls have names the cbid table lacks"),
        "{log}"
    );
    // NVTX: push/pop and start/end ranges, on their thread; marks and open ranges left out
    assert_eq!(
        rows(
            &ctx,
            "SELECT pid, tid, name, ts_ns - 1700000000000000000, dur_ns FROM cpu_event \
             WHERE ph = 'X' ORDER BY ts_ns"
        )
        .await,
        ["100|100|step 1|500|9000", "100|100|epoch|900|1150"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT pid, name, args FROM cpu_event WHERE ph = 'M' ORDER BY pid, tid"
        )
        .await,
        [
            r#"100|process_name|{"name": "trainer"}"#,
            r#"100|thread_name|{"name": "main"}"#,
            r#"100|thread_name|{"name": "worker"}"#,
            r#"200|process_name|{"name": "server"}"#,
        ]
    );
}

#[test]
fn nvtx_ranges_export_above_the_api_calls_and_unknown_names_show() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("r.sqlite");
    build(&report, SCHEMA_3X, &two_processes());
    let archive = tmp.path().join("a");
    imported(&[&report], &archive);
    let w = archive.join("report=r/process=100/window_id=000001");
    let json = tmp.path().join("t.json");
    let out = tracesql(&[
        "export",
        "-w",
        w.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let find = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let (range, call) = (find("step 1"), find("cudaLaunchKernel"));
    // the range and the call it encloses share the thread
    assert_eq!(range["tid"], call["tid"]);
    assert_eq!(range["pid"], call["pid"]);
    assert_eq!(range["cat"], "user_annotation");
    assert!(range["ts"].as_f64() < call["ts"].as_f64());
    find("cudaFutureCall");
}

#[tokio::test]
async fn an_old_2x_report_maps_by_column_names_and_warns_once_about_relative_times() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("old.sqlite");
    let (a, a1) = (gpid(7), gtid(7, 8));
    build(
        &report,
        SCHEMA_2X,
        &format!(
            r#"
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cuMemAlloc_v2'), (3, 'k'),
  (4, 'cuLaunchKernel');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 200, {a1}, 1, 1, 0),
  (300, 400, {a1}, 2, 2, 0), (500, 600, {a1}, 3, 4, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
  blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory) VALUES
  (250, 350, 0, 1, 7, 1, {a}, 3, 3, 8, 1, 1, 1, 32, 1, 1, 0, 0),
  (650, 750, 0, 1, 7, 3, {a}, 3, 3, 8, 1, 1, 1, 32, 1, 1, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES
  (410, 420, 0, 1, 7, 2, {a}, 8, 2, 3, 1);
INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid) VALUES
  (50, 800, 59, 'old range', {a1});
"#
        ),
    );
    let w = tmp.path().join("w");
    let log = imported(&[&report], &w);
    assert_eq!(
        log.matches("no TARGET_INFO_SESSION_START_TIME table")
            .count(),
        1,
        "{log}"
    );
    let ctx = open(&w).await;
    // no eventClass: the driver is told by the name
    assert_eq!(
        rows(
            &ctx,
            "SELECT domain, name, cbid IS NOT NULL, ts FROM api_call ORDER BY ts"
        )
        .await,
        [
            "runtime|cudaLaunchKernel|true|100",
            "driver|cuMemAlloc|true|300",
            "driver|cuLaunchKernel|true|500"
        ]
    );
    // no graph columns: eager; no ENUM tables: codes as written; relative times kept
    assert_eq!(
        rows(
            &ctx,
            "SELECT graph_node_id, graph_id, start_ns FROM kernel ORDER BY 3"
        )
        .await,
        ["0|0|250", "0|0|650"]
    );
    assert_eq!(
        rows(&ctx, "SELECT copy_kind, src_kind, dst_kind FROM gpu_memcpy").await,
        ["2|3|1"]
    );
    assert_eq!(
        rows(
            &ctx,
            "SELECT name, ts_ns, dur_ns FROM cpu_event WHERE ph = 'X'"
        )
        .await,
        ["old range|50|750"]
    );
    assert_eq!(
        rows(&ctx, "SELECT count(*) FROM launch").await,
        ["3"],
        "both kernels and the copy join their launch"
    );
}

#[tokio::test]
async fn text_that_is_not_utf8_and_null_or_empty_content_never_abort() {
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("win.sqlite");
    let (a, a1) = (gpid(3), gtid(3, 3));
    // a Windows export: names in a legacy code page (0xE9 = é in cp1252)
    build(
        &report,
        SCHEMA_3X,
        &format!(
            r#"
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, CAST(X'6B65726E656CE9' AS TEXT));
INSERT INTO PROCESSES VALUES ({a}, 3, CAST(X'707974686F6EFF' AS TEXT));
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 20, 0, {a1}, 1, 1, 0, NULL),
  (30, 40, 0, {a1}, 2, NULL, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
  blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory) VALUES
  (25, 35, 0, 1, 7, 1, {a}, 2, 2, 8, 1, 1, 1, 32, 1, 1, 0, 0),
  (45, 55, NULL, NULL, NULL, NULL, {a}, 99, NULL, NULL, 1, 1, 1, 32, 1, 1, NULL, NULL);
INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid) VALUES
  (5, 60, 59, CAST(X'C3A9E9' AS TEXT), {a1});
"#
        ),
    );
    let w = tmp.path().join("w");
    imported(&[&report], &w);
    let ctx = open(&w).await;
    assert_eq!(
        rows(&ctx, "SELECT name FROM kernel ORDER BY start_ns").await,
        ["kernel\u{fffd}", ""]
    );
    assert_eq!(
        rows(&ctx, "SELECT name FROM cpu_event WHERE ph = 'X'").await,
        ["é\u{fffd}"]
    );
    // a NULL nameId is an empty name, never a failure
    assert_eq!(rows(&ctx, "SELECT count(*) FROM cuda_runtime").await, ["2"]);
    // the memset table exists but is empty: no file, an empty table
    assert!(!w.join("gpu_memset.parquet").exists());
    assert_eq!(rows(&ctx, "SELECT count(*) FROM gpu_memset").await, ["0"]);
}

#[tokio::test]
async fn a_parquetdir_export_gives_the_same_windows_as_the_sqlite_report() {
    let tmp = tempfile::tempdir().unwrap();
    let synthetic = tmp.path().join("r.sqlite");
    build(&synthetic, SCHEMA_3X, &two_processes());
    for (sqlite, name) in [(fixture(), "real"), (synthetic, "synthetic")] {
        let dir = tmp.path().join(format!("{name}_parquet"));
        to_parquetdir(&sqlite, &dir);
        if name == "synthetic" {
            // a table may also come as a folder of parts: the runtime table split in two
            let table = dir.join("CUPTI_ACTIVITY_KIND_RUNTIME");
            std::fs::remove_file(table.with_extension("parquet")).unwrap();
            std::fs::create_dir(&table).unwrap();
            for (part, keep) in [(0, "rowid <= 3"), (1, "rowid > 3")] {
                let half = tmp.path().join(format!("half{part}.sqlite"));
                std::fs::copy(&sqlite, &half).unwrap();
                rusqlite::Connection::open(&half)
                    .unwrap()
                    .execute_batch(&format!(
                        "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE NOT ({keep})"
                    ))
                    .unwrap();
                let out = tmp.path().join(format!("half{part}"));
                to_parquetdir(&half, &out);
                std::fs::rename(
                    out.join("CUPTI_ACTIVITY_KIND_RUNTIME.parquet"),
                    table.join(format!("part-{part}.parquet")),
                )
                .unwrap();
            }
        }
        let (a, b) = (
            tmp.path().join(format!("{name}_a")),
            tmp.path().join(format!("{name}_b")),
        );
        imported(&[&sqlite], &a);
        imported(&[&dir], &b);
        let (ca, cb) = (open(&a).await, open(&b).await);
        for table in [
            "kernel",
            "gpu_memcpy",
            "gpu_memset",
            "cuda_runtime",
            "cuda_driver",
            "cuda_sync",
            "cuda_event",
            "overhead",
            "window_info",
            "cpu_event",
        ] {
            // an archive's report= values differ (r vs r_parquet): compare the rest
            let sql = if name == "real" {
                format!("SELECT * FROM {table}")
            } else {
                format!("SELECT * EXCLUDE (report) FROM {table}")
            };
            let (mut ra, mut rb) = (rows(&ca, &sql).await, rows(&cb, &sql).await);
            ra.sort();
            rb.sort();
            assert_eq!(ra, rb, "{name}: {table}");
            if table == "kernel" {
                assert!(!ra.is_empty());
            }
        }
    }
}

/// Every row of a window's Parquet table, in file order, as text lines, and the position of
/// its `start_ns` column.
fn file_rows(file: &Path) -> (Vec<String>, usize) {
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(file).unwrap(),
    )
    .unwrap();
    let start = builder.schema().index_of("start_ns").unwrap();
    let reader = builder.build().unwrap();
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let cols: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| {
                datafusion::arrow::compute::cast(c, &datafusion::arrow::datatypes::DataType::Utf8)
                    .unwrap()
            })
            .collect();
        for i in 0..batch.num_rows() {
            let cells: Vec<String> = cols
                .iter()
                .map(|c| {
                    let c = c
                        .as_any()
                        .downcast_ref::<datafusion::arrow::array::StringArray>()
                        .unwrap();
                    if datafusion::arrow::array::Array::is_null(c, i) {
                        "NULL".to_string()
                    } else {
                        c.value(i).to_string()
                    }
                })
                .collect();
            out.push(cells.join("|"));
        }
    }
    (out, start)
}

#[test]
fn a_report_out_of_time_order_is_written_in_time_order_like_one_in_order() {
    // The import streams a report's rows unsorted when they come in time order (as nsys
    // writes them) and sorts a mapping whose rows do not: both must give the same files.
    let tmp = tempfile::tempdir().unwrap();
    let ordered = tmp.path().join("ordered.sqlite");
    build(&ordered, SCHEMA_3X, &two_processes());
    let shuffled = tmp.path().join("shuffled.sqlite");
    build(&shuffled, SCHEMA_3X, &two_processes());
    let conn = rusqlite::Connection::open(&shuffled).unwrap();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
    ] {
        // the rows again, in reverse rowid order
        conn.execute_batch(&format!(
            "CREATE TABLE t AS SELECT * FROM {table} ORDER BY rowid DESC;
             DELETE FROM {table}; INSERT INTO {table} SELECT * FROM t; DROP TABLE t;"
        ))
        .unwrap();
    }
    drop(conn);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    imported(&[&ordered], &a);
    imported(&[&shuffled], &b);
    let mut compared = 0;
    for pid in [100, 200] {
        let part = format!("report=ordered/process={pid}/window_id=000001");
        let other = format!("report=shuffled/process={pid}/window_id=000001");
        for table in ["kernel", "cuda_runtime", "cuda_driver", "gpu_memcpy"] {
            let file = a.join(&part).join(format!("{table}.parquet"));
            if !file.exists() {
                continue;
            }
            let (want, start) = file_rows(&file);
            let (got, _) = file_rows(&b.join(&other).join(format!("{table}.parquet")));
            assert_eq!(got, want, "{pid} {table}");
            // and that order is time order
            let starts: Vec<i64> = want
                .iter()
                .map(|r| r.split('|').nth(start).unwrap().parse().unwrap())
                .collect();
            assert!(
                starts.windows(2).all(|w| w[0] <= w[1]),
                "{table}: {starts:?}"
            );
            compared += want.len();
        }
    }
    // pid 100: 3 kernels, 6 runtime calls, 1 driver call, 1 copy; pid 200: 1 kernel, 1 call
    assert_eq!(compared, 13);
}
