//! `tracesql import nsys` on bad reports: a missing table or column, a file that is not a
//! report, and a bounded mutation run (truncations, flipped bytes, dropped tables and
//! columns, of the SQLite and the parquetdir form) that must each end in a one-line error
//! with nothing left behind, or in a window every table of which reads.

use std::path::{Path, PathBuf};
use std::process::Command;

use tracesql::import::nsys::{import_nsys, NsysConfig};

use crate::nsys_reports::{build, to_parquetdir, two_processes, SCHEMA_3X};
use crate::support::rows;

fn cli_fails(report: &Path, output: &Path, needle: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["import", "nsys"])
        .arg(report)
        .arg("-o")
        .arg(output)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
    assert!(!output.exists());
    let mut tmp = output.as_os_str().to_owned();
    tmp.push(".tmp");
    assert!(!PathBuf::from(tmp).exists());
}

fn good_report(dir: &Path) -> PathBuf {
    let report = dir.join("r.sqlite");
    build(&report, SCHEMA_3X, &two_processes());
    report
}

fn sql(report: &Path, statement: &str) {
    rusqlite::Connection::open(report)
        .unwrap()
        .execute_batch(statement)
        .unwrap();
}

#[test]
fn a_missing_required_column_or_table_is_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let report = good_report(tmp.path());
    sql(
        &report,
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN correlationId",
    );
    cli_fails(
        &report,
        &tmp.path().join("w"),
        "table `CUPTI_ACTIVITY_KIND_KERNEL` lacks required column `correlationId`",
    );
    sql(&report, "DROP TABLE StringIds");
    cli_fails(&report, &tmp.path().join("w"), "missing table `StringIds`");
}

#[test]
fn a_report_without_gpu_work_or_that_is_no_report_fails_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let report = good_report(tmp.path());
    sql(
        &report,
        "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL; DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY; \
         DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET;",
    );
    cli_fails(&report, &tmp.path().join("w"), "no process did GPU work");
    sql(
        &report,
        "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; \
         DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET;",
    );
    cli_fails(
        &report,
        &tmp.path().join("w"),
        "missing table `CUPTI_ACTIVITY_KIND_KERNEL`",
    );
    let text = tmp.path().join("notes.sqlite");
    std::fs::write(
        &text,
        "this is not a database, just some text of a decent length\n".repeat(20),
    )
    .unwrap();
    cli_fails(&text, &tmp.path().join("w"), "not an SQLite report");
    cli_fails(
        &tmp.path().join("absent.sqlite"),
        &tmp.path().join("w"),
        "No such file",
    );
    let empty_dir = tmp.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    cli_fails(&empty_dir, &tmp.path().join("w"), "not an nsys report");
}

/// A small deterministic generator (xorshift), so every run mutates the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Import `report`; assert a one-line error and no output, or a window whose every table
/// and view reads. Returns whether it imported.
async fn import_is_whole_or_nothing(report: &Path, output: &Path, what: &str) -> bool {
    let config = NsysConfig {
        inputs: vec![report.to_path_buf()],
        output: output.to_path_buf(),
    };
    let mut tmp = output.as_os_str().to_owned();
    tmp.push(".tmp");
    match import_nsys(&config, |_| {}).await {
        Err(e) => {
            let message = e.to_string();
            assert!(!message.contains('\n'), "{what}: {message}");
            assert!(!message.is_empty(), "{what}");
            assert!(!output.exists(), "{what}: partial output after {message}");
            assert!(
                !PathBuf::from(tmp).exists(),
                "{what}: temporary folder left"
            );
            false
        }
        Ok(_) => {
            assert!(
                !PathBuf::from(tmp).exists(),
                "{what}: temporary folder left"
            );
            let window = tracesql::window::Window::open(output)
                .unwrap_or_else(|e| panic!("{what}: the window does not open: {e}"));
            let ctx = tracesql::catalog::open(&window)
                .await
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            for table in [
                "kernel",
                "gpu_memcpy",
                "cuda_runtime",
                "cuda_driver",
                "cuda_sync",
                "overhead",
                "cpu_event",
                "launch",
                "api_call",
            ] {
                let got = rows(&ctx, &format!("SELECT count(*) FROM {table}")).await;
                assert_eq!(got.len(), 1, "{what}: {table}");
            }
            true
        }
    }
}

/// A one-line error, or the report's tables.
fn loads_or_fails_on_one_line(report: &Path, what: &str) -> bool {
    match tracesql::import::nsys::load::load(report) {
        Ok(_) => true,
        Err(e) => {
            let message = e.to_string();
            assert!(
                !message.is_empty() && !message.contains('\n'),
                "{what}: {message}"
            );
            false
        }
    }
}

#[tokio::test]
async fn mutated_reports_give_a_one_line_error_or_a_whole_window() {
    let tmp = tempfile::tempdir().unwrap();
    let original = good_report(tmp.path());
    let bytes = std::fs::read(&original).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Byte-level damage goes through the reader (milliseconds each); a few of the damaged
    // files that still read go through the whole import, as do the structural changes.
    let mut whole: Vec<(PathBuf, String)> = Vec::new();
    let mut byte_cases = 0;
    let mut read_anyway = Vec::new();
    for cut in [
        0,
        16,
        99,
        100,
        512,
        bytes.len() / 3,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let p = tmp.path().join(format!("cut{cut}.sqlite"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        byte_cases += 1;
        if loads_or_fails_on_one_line(&p, &format!("truncated at {cut}")) {
            read_anyway.push((p, format!("truncated at {cut}")));
        }
    }
    for i in 0..48 {
        let mut b = bytes.clone();
        for _ in 0..1 + i % 4 {
            let at = (rng.next() % b.len() as u64) as usize;
            b[at] ^= 1 << (rng.next() % 8);
        }
        let p = tmp.path().join(format!("flip{i}.sqlite"));
        std::fs::write(&p, &b).unwrap();
        byte_cases += 1;
        if loads_or_fails_on_one_line(&p, &format!("flip set {i}")) {
            read_anyway.push((p, format!("flip set {i}")));
        }
    }
    assert!(read_anyway.len() < byte_cases, "no damage was ever noticed");
    whole.extend(read_anyway.into_iter().take(3));
    for (i, statement) in [
        "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME",
        "DROP TABLE TARGET_INFO_SESSION_START_TIME; DROP TABLE ENUM_CUDA_MEM_KIND",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridX",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN eventClass; \
         ALTER TABLE NVTX_EVENTS DROP COLUMN textId",
        "ALTER TABLE StringIds RENAME COLUMN value TO text",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'soon', globalPid = NULL WHERE rowid = 1",
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET globalTid = -1, start = 9223372036854775807",
    ]
    .iter()
    .enumerate()
    {
        let p = tmp.path().join(format!("drop{i}.sqlite"));
        std::fs::copy(&original, &p).unwrap();
        sql(&p, statement);
        whole.push((p, statement.to_string()));
    }
    // the parquetdir form: a table file removed, one truncated
    let removed = tmp.path().join("pq_rm");
    to_parquetdir(&original, &removed);
    std::fs::remove_file(removed.join("StringIds.parquet")).unwrap();
    whole.push((removed, "parquetdir without StringIds".into()));
    let cut = tmp.path().join("pq_cut");
    to_parquetdir(&original, &cut);
    let file = cut.join("CUPTI_ACTIVITY_KIND_KERNEL.parquet");
    let b = std::fs::read(&file).unwrap();
    std::fs::write(&file, &b[..b.len() / 2]).unwrap();
    whole.push((cut, "parquetdir with a truncated kernel table".into()));

    let mut outcomes = (0, 0);
    for (i, (report, what)) in whole.iter().enumerate() {
        let output = tmp.path().join(format!("out{i}"));
        if import_is_whole_or_nothing(report, &output, what).await {
            outcomes.0 += 1;
        } else {
            outcomes.1 += 1;
        }
    }
    // the run exercises both ends
    assert!(outcomes.0 > 0 && outcomes.1 > 0, "{outcomes:?}");
}
