//! The binary: output formats, atomic --output, one-line errors and exit codes, the demo.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::*;

fn tracesql(args: &[&str], cache: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .env("TRACESQL_CACHE_DIR", cache)
        .output()
        .unwrap()
}

fn query(format: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let out = tracesql(
        &[
            "query",
            "--window",
            w.to_str().unwrap(),
            "--format",
            format,
            "SELECT name, correlation_id FROM kernel WHERE graph_id = 0 ORDER BY start_ns",
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn csv_output() {
    assert_eq!(
        query("csv"),
        "name,correlation_id\n\
         \"void add_kernel<float>(float*, float const*, int)\",101\n\
         \"void mul_kernel<float>(float*, float const*, int)\",103\n"
    );
}

#[test]
fn json_output_is_one_array() {
    let v: serde_json::Value = serde_json::from_str(&query("json")).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["correlation_id"], 103);
}

#[test]
fn ndjson_output_is_one_object_per_line() {
    let text = query("ndjson");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0]["name"],
        "void add_kernel<float>(float*, float const*, int)"
    );
}

#[test]
fn table_output_is_aligned_text() {
    let text = query("table");
    assert!(text.contains("| name"), "{text}");
    assert!(
        text.contains("| void mul_kernel<float>(float*, float const*, int) | 103"),
        "{text}"
    );
}

#[test]
fn parquet_output_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out.parquet");
    let w = tiny_window();
    let out = tracesql(
        &[
            "query",
            "-w",
            w.to_str().unwrap(),
            "-o",
            dest.to_str().unwrap(),
            "SELECT correlation_id FROM kernel",
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = std::fs::File::open(&dest).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let n: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n, 4);
}

#[test]
fn a_sql_error_is_one_line_and_exit_1_and_leaves_no_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out.csv");
    let w = tiny_window();
    let out = tracesql(
        &[
            "query",
            "-w",
            w.to_str().unwrap(),
            "-o",
            dest.to_str().unwrap(),
            "SELECT no_such_column FROM kernel",
        ],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no_such_column"), "{stderr}");
    assert!(!dest.exists());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_broken_window_is_one_line_naming_file_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cols = runtime_columns();
    cols.retain(|(n, _)| *n != "end_ns");
    write_parquet(&tmp.path().join("cuda_runtime.parquet"), cols);
    let out = tracesql(
        &["query", "-w", tmp.path().to_str().unwrap(), "SELECT 1"],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cuda_runtime.parquet") && stderr.contains("end_ns"),
        "{stderr}"
    );
}

#[test]
fn a_script_runs_every_statement_and_prints_the_last() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("q.sql");
    std::fs::write(
        &script,
        "CREATE VIEW eager AS SELECT * FROM kernel WHERE graph_id = 0;\n\
         SELECT count(*) AS n FROM eager;",
    )
    .unwrap();
    let w = tiny_window();
    let out = tracesql(
        &[
            "query",
            "-w",
            w.to_str().unwrap(),
            "--format",
            "csv",
            "-f",
            script.to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "n\n2\n");
}

#[test]
fn without_a_window_the_demo_answers_and_says_so() {
    let cache = tempfile::tempdir().unwrap();
    let out = tracesql(
        &[
            "query",
            "--format",
            "csv",
            "SELECT count(*) > 0 AS has_kernels FROM kernel",
        ],
        cache.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "has_kernels\ntrue\n"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1);
    assert!(stderr.contains("demo window"), "{stderr}");
}

#[test]
fn tables_lists_row_counts_and_views() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let out = tracesql(&["tables", "-w", w.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("kernel ") && l.ends_with("4 rows")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("cuda_sync ") && l.ends_with("2 rows")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("launch ") && l.ends_with("view")),
        "{text}"
    );
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["query", "-w", w.to_str().unwrap(), "--format", "csv"])
        .arg("SELECT * FROM cbid CROSS JOIN (SELECT 1 AS k UNION ALL SELECT 2)")
        .env("TRACESQL_CACHE_DIR", tmp.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is dropped here: the reader went away, as with `| head -1`.
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
