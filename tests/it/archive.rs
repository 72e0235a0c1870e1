//! Archives (spec §8): every table and view gains the partition columns, and joins never pair
//! rows of different windows.

use tracesql::window::Window;

use crate::support::*;

fn two_host_archive() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&tiny_window(), &tmp.path().join("host=a/window_id=000001"));
    copy_dir(&tiny_window(), &tmp.path().join("host=b/window_id=000002"));
    // A window still being written is not part of the archive.
    copy_dir(
        &tiny_window(),
        &tmp.path().join("host=b/window_id=000003.tmp"),
    );
    tmp
}

#[tokio::test]
async fn tables_gain_the_partition_columns() {
    let tmp = two_host_archive();
    let window = Window::open(tmp.path()).unwrap();
    assert_eq!(window.partition_keys, vec!["host", "window_id"]);
    let ctx = tracesql::catalog::open(&window).await.unwrap();
    let got = rows(
        &ctx,
        "SELECT host, window_id, arrow_typeof(window_id), count(*) FROM kernel GROUP BY 1, 2, 3 ORDER BY 1",
    )
    .await;
    assert_eq!(got, vec!["a|1|Int64|4", "b|2|Int64|4"]);
    let cpu = rows(
        &ctx,
        "SELECT host, count(*) FROM cpu_event WHERE ph = 'M' GROUP BY host ORDER BY host",
    )
    .await;
    assert_eq!(cpu, vec!["a|5", "b|5"]);
    let empty = rows(
        &ctx,
        "SELECT count(*), count(window_id) FROM cuda_sync WHERE window_id > 5",
    )
    .await;
    assert_eq!(empty, vec!["0|0"]);
}

#[tokio::test]
async fn views_join_within_a_window_only() {
    let tmp = two_host_archive();
    let ctx = open(tmp.path()).await;
    // Both windows hold the same correlation ids; a join across windows would double them.
    let got = rows(
        &ctx,
        "SELECT window_id, count(*) FROM launch GROUP BY window_id ORDER BY window_id",
    )
    .await;
    assert_eq!(got, vec!["1|6", "2|6"]);
    let edges = rows(&ctx, "SELECT count(*) FROM graph_edge").await;
    assert_eq!(edges, vec!["6"]);
}

#[tokio::test]
async fn a_predicate_on_window_id_reads_only_that_window() {
    let tmp = two_host_archive();
    let ctx = open(tmp.path()).await;
    let got = rows(&ctx, "SELECT count(*) FROM kernel WHERE window_id = 2").await;
    assert_eq!(got, vec!["4"]);
    let plan = rows(
        &ctx,
        "EXPLAIN SELECT name FROM kernel WHERE window_id = 2 AND grid_x > 1",
    )
    .await;
    let physical = plan
        .iter()
        .find(|l| l.starts_with("physical_plan"))
        .unwrap();
    assert!(physical.contains("window_id=000002"), "{physical}");
    assert!(!physical.contains("window_id=000001"), "{physical}");
}

#[test]
fn windows_at_different_depths_are_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&tiny_window(), &tmp.path().join("host=a/window_id=000001"));
    copy_dir(&tiny_window(), &tmp.path().join("window_id=000002"));
    let err = Window::open(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("partition folders differ"), "{err}");
}
