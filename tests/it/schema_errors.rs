//! The reading rules of docs/window-format.md: each schema error, casting, extra columns,
//! unknown files, corrupt files.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int16Array, UInt32Array};
use tracesql::window::Window;
use tracesql::Error;

use crate::support::*;

fn window_with_runtime(columns: Vec<(&'static str, ArrayRef)>) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write_parquet(&tmp.path().join("cuda_runtime.parquet"), columns);
    tmp
}

#[test]
fn a_missing_required_column_names_file_column_and_type() {
    let mut cols = runtime_columns();
    cols.retain(|(n, _)| *n != "correlation_id");
    let tmp = window_with_runtime(cols);
    let err = Window::open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::MissingColumn { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("cuda_runtime.parquet"), "{msg}");
    assert!(
        msg.contains("`correlation_id`") && msg.contains("Int64"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn a_column_that_cannot_be_cast_names_expected_and_found_types() {
    let mut cols = runtime_columns();
    cols[0] = ("cbid", strs(&["a", "b"]));
    let tmp = window_with_runtime(cols);
    let err = Window::open(tmp.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ColumnType { .. }), "{err:?}");
    assert!(
        msg.contains("cuda_runtime.parquet") && msg.contains("`cbid`"),
        "{msg}"
    );
    assert!(
        msg.contains("expected Int64") && msg.contains("Utf8"),
        "{msg}"
    );
}

#[test]
fn a_truncated_parquet_file_is_an_error_naming_the_file() {
    let tmp = window_with_runtime(runtime_columns());
    let path = tmp.path().join("cuda_runtime.parquet");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = Window::open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::CorruptParquet { .. }), "{err:?}");
    assert!(err.to_string().contains("cuda_runtime.parquet"));
}

#[test]
fn a_file_of_garbage_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("kernel.parquet"), b"not parquet at all").unwrap();
    let err = Window::open(tmp.path()).unwrap_err();
    assert!(err.to_string().contains("kernel.parquet"), "{err}");
}

#[tokio::test]
async fn narrower_and_unsigned_integers_are_cast_to_int64() {
    let mut cols = runtime_columns();
    cols[0] = (
        "cbid",
        Arc::new(Int16Array::from(vec![211i16, 311])) as ArrayRef,
    );
    cols[4] = (
        "thread_id",
        Arc::new(UInt32Array::from(vec![4_000_000_000u32, 1])) as ArrayRef,
    );
    cols[5] = ("correlation_id", i32s(&[1, 2]));
    let tmp = window_with_runtime(cols);
    let ctx = open(tmp.path()).await;
    let got = rows(
        &ctx,
        "SELECT arrow_typeof(cbid), arrow_typeof(thread_id), cbid, thread_id, correlation_id \
         FROM cuda_runtime ORDER BY correlation_id",
    )
    .await;
    assert_eq!(
        got,
        vec!["Int64|Int64|211|4000000000|1", "Int64|Int64|311|1|2"]
    );
}

#[tokio::test]
async fn extra_columns_are_kept_and_queryable() {
    let mut cols = runtime_columns();
    cols.push(("return_value", i64s(&[0, 700])));
    cols.push(("note", strs(&["ok", "late"])));
    let tmp = window_with_runtime(cols);
    let ctx = open(tmp.path()).await;
    let got = rows(
        &ctx,
        "SELECT note, return_value FROM cuda_runtime ORDER BY 2",
    )
    .await;
    assert_eq!(got, vec!["ok|0", "late|700"]);
}

#[test]
fn unknown_files_are_ignored_with_one_warning_each() {
    let tmp = window_with_runtime(runtime_columns());
    std::fs::write(tmp.path().join("notes.txt"), "hi").unwrap();
    std::fs::write(tmp.path().join("mystery.parquet"), "x").unwrap();
    let window = Window::open(tmp.path()).unwrap();
    assert_eq!(window.warnings.len(), 2, "{:?}", window.warnings);
    assert!(window.warnings.iter().any(|w| w.contains("notes.txt")));
    assert!(window
        .warnings
        .iter()
        .any(|w| w.contains("mystery.parquet")));
    assert!(window.table("cuda_runtime").is_some());
}

#[tokio::test]
async fn a_zero_row_file_reads_as_an_absent_kind() {
    let tmp = window_with_runtime(runtime_columns());
    // A zero-row kernel file with only one column: treated like no file at all.
    write_parquet(
        &tmp.path().join("kernel.parquet"),
        vec![("start_ns", i64s(&[]))],
    );
    let ctx = open(tmp.path()).await;
    assert_eq!(rows(&ctx, "SELECT count(*) FROM kernel").await, vec!["0"]);
    assert_eq!(
        rows(
            &ctx,
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'kernel'"
        )
        .await,
        vec![tracesql::schema::table_spec("kernel")
            .unwrap()
            .columns
            .len()
            .to_string()]
    );
}
