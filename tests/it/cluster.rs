//! `--cluster`: an in-process Ballista cluster (a scheduler and an executor of ours on
//! 127.0.0.1 ephemeral ports) gives the answers of a local catalog over the same archive:
//! joins through the views, partition pruning, cpu_event, the in-memory cbid table, reports.

use std::path::Path;
use std::sync::OnceLock;

use tracesql::cluster::serve::{bind_scheduler, run_executor, ExecutorOptions, SchedulerOptions};
use tracesql::cluster::Endpoint;
use tracesql::synth::{write_window, SynthConfig};
use tracesql::window::Window;

use crate::support::*;

/// The scheduler of one cluster shared by the tests, on a runtime of its own (each test's
/// runtime ends with the test).
fn cluster() -> Endpoint {
    static ENDPOINT: OnceLock<Endpoint> = OnceLock::new();
    ENDPOINT
        .get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let bind = "127.0.0.1:0".parse().unwrap();
                    let (addr, serve) = bind_scheduler(&SchedulerOptions { bind }).await.unwrap();
                    tokio::spawn(serve);
                    let scheduler: Endpoint = addr.to_string().parse().unwrap();
                    let free = || {
                        std::net::TcpListener::bind("127.0.0.1:0")
                            .unwrap()
                            .local_addr()
                            .unwrap()
                    };
                    tokio::spawn(run_executor(ExecutorOptions {
                        scheduler: scheduler.clone(),
                        bind: free(),
                        grpc_port: free().port(),
                        external_host: None,
                        concurrent_tasks: Some(2),
                        work_dir: None,
                    }));
                    tx.send(scheduler).unwrap();
                    std::future::pending::<()>().await
                })
            });
            rx.recv().unwrap()
        })
        .clone()
}

/// An archive `rank=R/window_id=N` of small synth windows (2 ranks x 2 windows).
fn synth_archive() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let mut id = 0;
    for rank in 0..2 {
        for _ in 0..2 {
            id += 1;
            let mut config = SynthConfig::new(3_000, id as u64);
            config.window_id = id;
            let dir = tmp.path().join(format!("rank={rank}/window_id={id:06}"));
            write_window(&config, &dir).unwrap();
        }
    }
    tmp
}

async fn both(
    root: &Path,
) -> (
    datafusion::prelude::SessionContext,
    datafusion::prelude::SessionContext,
) {
    let window = Window::open(root).unwrap();
    let local = tracesql::catalog::open(&window).await.unwrap();
    let remote = tracesql::cluster::open(&cluster(), &window).await.unwrap();
    (local, remote)
}

async fn same_answer(
    local: &datafusion::prelude::SessionContext,
    remote: &datafusion::prelude::SessionContext,
    sql: &str,
) -> Vec<String> {
    let want = rows(local, sql).await;
    assert!(!want.is_empty(), "{sql}: no rows locally");
    // The remote session's plan is Ballista's: the query runs on the cluster.
    let plan = remote
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(false)
        .to_string();
    assert!(shown.contains("DistributedQueryExec"), "{shown}");
    let got = rows(remote, sql).await;
    assert_eq!(got, want, "{sql}");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_through_the_views_give_the_local_answers() {
    let tmp = synth_archive();
    let (local, remote) = both(tmp.path()).await;
    let per_window = same_answer(
        &local,
        &remote,
        "SELECT rank, window_id, count(*), sum(dur), sum(launch_latency) FROM launch \
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .await;
    assert_eq!(per_window.len(), 4);
    same_answer(
        &local,
        &remote,
        "SELECT kind, name, count(*), sum(dur), min(ts) FROM gpu_op \
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .await;
    same_answer(
        &local,
        &remote,
        "SELECT g.rank, count(*) FROM gpu_op g JOIN launch l ON g.correlation_id = l.correlation_id \
         AND g.rank = l.rank AND g.window_id = l.window_id GROUP BY 1 ORDER BY 1",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cpu_event_cpu_trace_and_cbid_give_the_local_answers() {
    let tmp = synth_archive();
    let (local, remote) = both(tmp.path()).await;
    same_answer(
        &local,
        &remote,
        "SELECT rank, window_id, ph, count(*), sum(dur_ns), max(name) FROM cpu_event GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .await;
    same_answer(
        &local,
        &remote,
        "SELECT rank, window_id, dir, path, base_ns FROM cpu_trace ORDER BY 1, 2",
    )
    .await;
    same_answer(&local, &remote, "SELECT count(*), min(name) FROM cbid").await;
    same_answer(
        &local,
        &remote,
        "SELECT rank, window_id, count(*), sum(cpu_dur) FROM cpu_launch GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_predicates_prune_whole_windows() {
    let tmp = synth_archive();
    let (local, remote) = both(tmp.path()).await;
    let sql = "SELECT rank, window_id, count(*) FROM kernel WHERE window_id = 1 GROUP BY 1, 2";
    let want = rows(&local, sql).await;
    let rank_sql = "SELECT count(*) FROM kernel WHERE rank = 0";
    let rank_want = rows(&local, rank_sql).await;
    // Window 4 (rank 1) becomes unreadable: only a plan that reads it can fail.
    let broken = tmp.path().join("rank=1/window_id=000004/kernel.parquet");
    std::fs::write(&broken, b"not parquet").unwrap();
    assert_eq!(rows(&remote, sql).await, want);
    assert_eq!(rows(&remote, rank_sql).await, rank_want);
    let all = remote
        .sql("SELECT count(*) FROM kernel")
        .await
        .unwrap()
        .collect()
        .await;
    assert!(
        all.is_err(),
        "a plan over every window reads the broken file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_give_the_local_answers() {
    let tmp = synth_archive();
    let (local, remote) = both(tmp.path()).await;
    let partitions = vec!["rank".to_string(), "window_id".to_string()];
    tracesql::report::register_helpers(&local, &partitions)
        .await
        .unwrap();
    tracesql::report::register_helpers(&remote, &partitions)
        .await
        .unwrap();
    for name in ["kernel_summary", "memcpy_summary"] {
        let sql = tracesql::report::find(name)
            .unwrap()
            .sql(&partitions, &[])
            .unwrap();
        let sql = format!("SELECT * FROM ({sql}) ORDER BY 1, 2, 3");
        same_answer(&local, &remote, &sql).await;
    }
}

#[test]
fn an_unreachable_scheduler_is_one_line_and_exit_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = std::time::Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args([
            "query",
            "--cluster",
            &format!("df://127.0.0.1:{port}"),
            "-w",
        ])
        .arg(tiny_window())
        .arg("select count(*) from kernel")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(started.elapsed() < tracesql::cluster::CONNECT_TIMEOUT * 3);
}

/// The Chrome trace of `path`, parsed, without `traceName` (the output's own path).
fn chrome_events(path: &Path) -> serde_json::Value {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()),
        &mut text,
    )
    .unwrap();
    let mut trace: serde_json::Value = serde_json::from_str(&text).unwrap();
    trace.as_object_mut().unwrap().remove("traceName");
    trace
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn convert_on_the_cluster_writes_the_local_outputs_one_row_per_window() {
    use tracesql::convert::{ConvertConfig, Outcome, TraceFormat};
    let tmp = synth_archive();
    // Window 2 cannot be converted (its kernel table is cut short): that window's row says
    // so, the others convert.
    let kernel = tmp.path().join("rank=0/window_id=000002/kernel.parquet");
    let bytes = std::fs::read(&kernel).unwrap();
    std::fs::write(&kernel, &bytes[..bytes.len() / 2]).unwrap();
    let out = tempfile::tempdir().unwrap();
    let config = |output: &Path| ConvertConfig {
        archive: tmp.path().to_path_buf(),
        output: output.to_path_buf(),
        formats: vec![TraceFormat::Chrome],
        jobs: 1,
        force: false,
        max_size: None,
    };
    let windows = || {
        tracesql::convert::find(&config(out.path()))
            .unwrap()
            .windows
    };
    let noop = std::sync::Arc::new(|_: &tracesql::convert::WindowReport| {});
    let local = out.path().join("local");
    let remote = out.path().join("remote");
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let want = tracesql::convert::convert(&config(&local), windows(), cancel, noop.clone())
        .await
        .unwrap();
    let got =
        tracesql::cluster::convert::convert(&cluster(), &config(&remote), windows(), noop.clone())
            .await
            .unwrap();
    assert_eq!(got.reports.len(), 4);
    // Each window converts once (Ballista 55 gave each of the stage's first tasks every
    // window), the failed one included.
    let started = |dir: &Path| {
        tracesql::cluster::convert::conversions_started(&std::path::absolute(dir).unwrap())
    };
    assert_eq!(started(&remote), 4);
    for (g, w) in got.reports.iter().zip(&want.reports) {
        assert_eq!(g.window, w.window);
        assert_eq!(g.outputs, w.outputs);
        match (&g.outcome, &w.outcome) {
            (Outcome::Failed(_), Outcome::Failed(_)) => {}
            (g_outcome, w_outcome) => assert_eq!(g_outcome, w_outcome, "{}", g.window.display()),
        }
        // The row's event count is the events written, as locally.
        assert_eq!(g.events, w.events, "{}", g.window.display());
        if w.outcome == Outcome::Converted {
            let file = &w.outputs[0];
            let trace = chrome_events(&remote.join(file));
            assert_eq!(trace, chrome_events(&local.join(file)));
            assert!(g.events > 0, "{}", g.window.display());
        } else {
            assert_eq!(g.events, 0, "{}", g.window.display());
        }
    }
    assert_eq!(got.converted(), 3);
    assert_eq!(got.failed().count(), 1);
    // A second run finds the outputs up to date.
    let again = tracesql::cluster::convert::convert(&cluster(), &config(&remote), windows(), noop)
        .await
        .unwrap();
    assert_eq!(again.up_to_date(), 3);
    assert_eq!(started(&remote), 8);
    assert!(again.reports.iter().all(|r| r.events == 0));
}

/// The decompressed size of a window's CPU trace.
fn cpu_trace_bytes(window: &Path) -> usize {
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(
            std::fs::File::open(window.join("cpu_trace.json.gz")).unwrap(),
        ),
        &mut text,
    )
    .unwrap();
    text.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_trace_over_the_message_limit_is_read_on_the_executors() {
    // Ballista's messages (plans, tasks, results) are limited to 16 MB: `cpu_event` rows
    // that travelled inside the plan could not exceed it; read by the executors, they can.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("window_id=000001");
    write_window(&SynthConfig::new(420_000, 5), &dir).unwrap();
    let limit = 16 * 1024 * 1024;
    assert!(
        cpu_trace_bytes(&dir) > limit,
        "the premise: a CPU trace over 16 MB"
    );
    let (local, remote) = both(tmp.path()).await;
    let got = same_answer(
        &local,
        &remote,
        "SELECT window_id, count(*), sum(length(raw)), sum(ts_ns), max(name) FROM cpu_event GROUP BY 1",
    )
    .await;
    assert_eq!(got.len(), 1);
    // Every event's text reaches the client, in pieces under the limit.
    let batches = remote
        .sql("SELECT raw FROM cpu_event")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text: usize = batches
        .iter()
        .map(|b| b.column(0).get_array_memory_size())
        .sum();
    assert!(text > limit, "{text} bytes of event text");
}
