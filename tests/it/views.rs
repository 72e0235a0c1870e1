//! The views of sql/views/ on the tiny fixture window, and the two guards of sql/: every file
//! is registered, and every view plans against empty canonical tables (one window and an
//! archive).

use std::path::Path;

use tracesql::sql::{all_objects, DOCTOR, EXPORT, VIEWS};
use tracesql::window::Window;

use crate::support::*;

#[test]
fn every_sql_file_is_registered() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("sql");
    let mut on_disk = Vec::new();
    // every file at any depth (sql/import/nsys/ is two levels down)
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            on_disk.push(rel);
        }
    }
    on_disk.sort();
    let mut registered: Vec<String> = all_objects().map(|o| o.path.to_string()).collect();
    registered.sort();
    assert_eq!(on_disk, registered);
    for object in all_objects() {
        // a report is a query that opens with its header; every other object defines a view
        // a script (sql/scripts/) computes tables
        let is_report = object.path.starts_with("reports/") && !object.name.starts_with('_');
        let defines = match (is_report, object.path.starts_with("scripts/")) {
            (true, _) => format!("-- @report {}:", object.name),
            (false, true) => "CREATE OR REPLACE TABLE ".to_string(),
            (false, false) => format!("CREATE OR REPLACE VIEW {} AS", object.name),
        };
        assert!(
            object.text.contains(&defines),
            "{} must define {}",
            object.path,
            object.name
        );
        assert!(
            object.text.starts_with("--"),
            "{} must open with a comment",
            object.path
        );
    }
}

#[tokio::test]
async fn every_view_plans_against_empty_canonical_tables() {
    for partitions in [vec![], vec!["host".to_string(), "window_id".to_string()]] {
        let window = Window::empty(Path::new("/nonexistent"), partitions.clone());
        let ctx = tracesql::catalog::open(&window).await.unwrap();
        tracesql::doctor::register(&ctx, &partitions).await.unwrap();
        for object in VIEWS.iter().chain(DOCTOR) {
            let got = rows(&ctx, &format!("SELECT count(*) FROM {}", object.name)).await;
            assert_eq!(
                got,
                vec!["0"],
                "{} with partitions {partitions:?}",
                object.name
            );
            let schema = ctx.table(object.name).await.unwrap().schema().clone();
            for p in &partitions {
                assert!(
                    schema.field_with_unqualified_name(p).is_ok(),
                    "{} lacks {p}",
                    object.name
                );
            }
        }
    }
}

#[tokio::test]
async fn every_export_plan_plans_against_empty_canonical_tables() {
    // Export runs on one window: no partition columns.
    let window = Window::empty(Path::new("/nonexistent"), vec![]);
    let ctx = tracesql::export::plan_session(&window).await.unwrap();
    for object in EXPORT {
        let got = rows(&ctx, &format!("SELECT count(*) FROM {}", object.name)).await;
        assert_eq!(got, vec!["0"], "{}", object.name);
    }
}

#[tokio::test]
async fn api_call_names_calls_and_keys_threads_by_their_signed_low_32_bits() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT domain, name, correlation_id, thread_id_i32 FROM api_call ORDER BY correlation_id",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "runtime|cudaLaunchKernel|101|-1698031872",
            "runtime|cudaGetDevice|102|-1698031872",
            "runtime|cudaLaunchKernel|103|-1698031872",
            "runtime|cudaGraphLaunch|106|-1698031872",
            "driver|cuLaunchKernel|107|4251",
        ]
    );
    let joined = rows(
        &ctx,
        "SELECT t.resource_id FROM api_call a JOIN thread_resource t \
         ON t.process_id = a.process_id AND t.thread_id = a.thread_id_i32 LIMIT 1",
    )
    .await;
    assert_eq!(joined, vec!["4243"]);
}

#[tokio::test]
async fn api_call_names_unknown_cbids_after_their_number() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cols = runtime_columns();
    cols[0] = ("cbid", i64s(&[211, 99999]));
    write_parquet(&tmp.path().join("cuda_runtime.parquet"), cols);
    let ctx = open(tmp.path()).await;
    let got = rows(&ctx, "SELECT name FROM api_call ORDER BY correlation_id").await;
    assert_eq!(got, vec!["cudaLaunchKernel", "cbid_99999"]);
}

#[tokio::test]
async fn gpu_op_unites_every_gpu_kind_under_exporter_names() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT kind, name, dur, stream_id FROM gpu_op ORDER BY ts",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "kernel|void add_kernel<float>(float*, float const*, int)|2000|7",
            "kernel|void mul_kernel<float>(float*, float const*, int)|2100|7",
            "gpu_memcpy|Memcpy|1000|7",
            "gpu_memset|Memset|400|7",
            "kernel|gemm_tile_kernel|1000|13",
            "kernel|relu_kernel|1500|13",
            "graph_event_node|EventRecord|0|13",
            "graph_host_node|HostNode: my_host_callback|800|13",
        ]
    );
}

#[tokio::test]
async fn launch_fans_a_graph_launch_out_to_every_op_of_its_replay() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT api_name, count(*) FROM launch GROUP BY api_name ORDER BY api_name",
    )
    .await;
    // 104 (memcpy) and 105 (memset) have no API record in the fixture: no launch row.
    assert_eq!(got, vec!["cudaGraphLaunch|4", "cudaLaunchKernel|2"]);
    let latency = rows(
        &ctx,
        "SELECT launch_latency FROM launch WHERE correlation_id = 101",
    )
    .await;
    assert_eq!(latency, vec!["18000"]);
}

#[tokio::test]
async fn cpu_launch_links_kineto_ops_to_the_api_calls_they_issued() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT cpu_name, api_name, correlation_id FROM cpu_launch ORDER BY correlation_id",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "aten::add|cudaLaunchKernel|101",
            "aten::mul|cudaGetDevice|102",
            "aten::mul|cudaLaunchKernel|103",
            "graph_replay|cudaGraphLaunch|106",
        ]
    );
}

#[tokio::test]
async fn graph_edge_resolves_dependencies_within_one_replay() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT pred_kind, kind, correlation_id, pred_end_ts <= ts FROM graph_edge ORDER BY node_ordinal",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "kernel|kernel|106|true",
            "kernel|graph_event_node|106|true",
            "graph_event_node|graph_host_node|106|true",
        ]
    );
}

#[tokio::test]
async fn gpu_op_clamped_clamps_overlaps_on_a_lane_and_keeps_the_raw_end() {
    let ctx = open(&tiny_window()).await;
    let got = rows(
        &ctx,
        "SELECT name, dur, raw_end_ts - ts, clamped FROM gpu_op_clamped WHERE clamped",
    )
    .await;
    // add_kernel (10000..12000) overlaps mul_kernel (starts 11900) on stream 7 by 100 ns.
    assert_eq!(
        got,
        vec!["void add_kernel<float>(float*, float const*, int)|1900|2000|true"]
    );
    let total = rows(&ctx, "SELECT count(*) FROM gpu_op_clamped").await;
    assert_eq!(total, vec!["8"]);
}
