//! The catalog over the tiny fixture window: every kind is a table, absent kinds are empty
//! tables of the canonical schema, cpu_event and cbid are there.

use tracesql::schema::{table_spec, TABLES};

use crate::support::*;

#[tokio::test]
async fn every_kind_and_side_table_is_a_table_with_its_canonical_columns() {
    let ctx = open(&tiny_window()).await;
    for spec in TABLES {
        let table = ctx.table(spec.name).await.unwrap();
        let schema = table.schema();
        for col in spec.columns {
            let field = schema.field_with_unqualified_name(col.name).unwrap();
            assert_eq!(
                field.data_type(),
                &col.ty.table_type(),
                "{}.{}",
                spec.name,
                col.name
            );
        }
    }
}

#[tokio::test]
async fn fixture_row_counts_match_the_example_window() {
    let ctx = open(&tiny_window()).await;
    let counts = [
        ("kernel", 4),
        ("gpu_memcpy", 1),
        ("gpu_memset", 1),
        ("graph_event_node", 1),
        ("graph_host_node", 1),
        ("cuda_runtime", 4),
        ("cuda_driver", 1),
        ("overhead", 3),
        ("cuda_event", 1),
        ("cuda_sync", 2),
        ("external_correlation", 7),
        ("environment", 7),
        ("pm_sampling", 2),
        ("user_annotation", 2),
        ("thread_resource", 1),
        ("graph_deps", 3),
        ("graph_event_record", 1),
        ("window_info", 1),
    ];
    for (table, n) in counts {
        let got = rows(&ctx, &format!("SELECT count(*) FROM {table}")).await;
        assert_eq!(got, vec![n.to_string()], "{table}");
    }
}

#[tokio::test]
async fn an_absent_kind_is_an_empty_table_with_the_canonical_schema() {
    let tmp = tempfile::tempdir().unwrap();
    write_parquet(&tmp.path().join("cuda_runtime.parquet"), runtime_columns());
    let ctx = open(tmp.path()).await;
    assert_eq!(
        rows(&ctx, "SELECT count(*) FROM cuda_sync").await,
        vec!["0"]
    );
    let sync = ctx.table("cuda_sync").await.unwrap();
    assert_eq!(
        sync.schema().fields().len(),
        table_spec("cuda_sync").unwrap().columns.len()
    );
    // Views over absent kinds still answer.
    assert_eq!(rows(&ctx, "SELECT count(*) FROM gpu_op").await, vec!["0"]);
    assert_eq!(rows(&ctx, "SELECT count(*) FROM api_call").await, vec!["2"]);
}

#[tokio::test]
async fn optional_columns_a_file_lacks_read_as_null() {
    // The tiny window's overhead file has no correlation_id (optional).
    let ctx = open(&tiny_window()).await;
    let got = rows(&ctx, "SELECT count(correlation_id), count(*) FROM overhead").await;
    assert_eq!(got, vec!["0|3"]);
}

#[tokio::test]
async fn pm_sampling_metrics_are_float_columns() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT \"sm__cycles_active.avg.pct_of_peak_sustained_elapsed\" FROM pm_sampling ORDER BY start_ns",
    )
    .await;
    assert_eq!(got, vec!["55.5", "80.25"]);
}

#[tokio::test]
async fn cpu_event_has_exact_nanosecond_times_and_external_ids() {
    let ctx = open(&tiny_window()).await;
    // aten::add: ts 4999991.0 us after baseTimeNanoseconds 1759300074000000000, dur 6.0 us.
    let got = rows(
        &ctx,
        "SELECT ts_ns, dur_ns, external_id, pid, tid FROM cpu_event WHERE name = 'aten::add'",
    )
    .await;
    assert_eq!(got, vec!["1759300078999991000|6000|2|4242|4243"]);
    let meta = rows(&ctx, "SELECT count(*) FROM cpu_event WHERE ph = 'M'").await;
    assert_eq!(meta, vec!["5"]);
}

#[tokio::test]
async fn cbid_names_drop_the_version_suffix() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT raw_name, name FROM cbid WHERE domain = 'runtime' AND cbid = 211",
    )
    .await;
    assert_eq!(got, vec!["cudaLaunchKernel_v7000|cudaLaunchKernel"]);
}

#[tokio::test]
async fn views_are_listed_as_views_and_answer_the_same_when_read_at_once() {
    let ctx = open(&tiny_window()).await;
    let listed = rows(
        &ctx,
        "SELECT table_name FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_type = 'VIEW' ORDER BY table_name",
    )
    .await;
    let mut views: Vec<String> = tracesql::sql::VIEWS
        .iter()
        .map(|v| v.name.to_string())
        .collect();
    views.sort();
    assert_eq!(listed, views);

    // Eight queries plan `launch` (and the views it reads) at the same moment, on first use.
    let query = "SELECT correlation_id, api_name, name FROM launch ORDER BY correlation_id, name";
    let at_once = futures::future::join_all((0..8).map(|_| rows(&ctx, query))).await;
    let alone = rows(&open(&tiny_window()).await, query).await;
    assert!(!alone.is_empty());
    for answer in at_once {
        assert_eq!(answer, alone);
    }
}

#[tokio::test]
async fn a_view_is_planned_when_first_read_and_its_failure_names_its_file() {
    let ctx = open(&tiny_window()).await;
    // Registering plans nothing: the mistake in the view shows on its first read.
    tracesql::catalog::lazy::create_view(
        &ctx,
        "broken",
        "SELECT no_such_column FROM kernel",
        "CREATE OR REPLACE VIEW broken AS SELECT no_such_column FROM kernel",
        "sql/views/broken.sql",
    )
    .await
    .unwrap();
    assert_eq!(rows(&ctx, "SELECT count(*) FROM kernel").await, vec!["4"]);
    let err = ctx
        .sql("SELECT * FROM broken")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("sql/views/broken.sql"), "{err}");
    assert!(err.contains("no_such_column"), "{err}");
}

#[tokio::test]
async fn a_users_view_replaces_or_drops_a_built_in_one_which_the_others_still_read() {
    let ctx = open(&tiny_window()).await;
    let err = ctx
        .sql("CREATE VIEW gpu_op AS SELECT 1 AS x")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("already exists"), "{err}");
    rows(&ctx, "CREATE OR REPLACE VIEW gpu_op AS SELECT 7 AS x").await;
    assert_eq!(rows(&ctx, "SELECT x FROM gpu_op").await, vec!["7"]);
    // The built-in views still read the built-in gpu_op, as when they were planned at open,
    // though `launch` is planned only now.
    let launches = "SELECT count(*), sum(dur) FROM launch";
    let fresh = rows(&open(&tiny_window()).await, launches).await;
    assert_ne!(fresh, vec!["0|"]);
    assert_eq!(rows(&ctx, launches).await, fresh);
    rows(&ctx, "DROP VIEW launch").await;
    assert!(ctx.sql("SELECT * FROM launch").await.is_err());
}
