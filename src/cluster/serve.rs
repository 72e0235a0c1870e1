//! The cluster's processes: a Ballista scheduler and executors that carry tracesql's
//! pieces (the session state of [`super::session_state`], its functions, our codec).
//!
//! In: a [`SchedulerOptions`] or [`ExecutorOptions`]. Out: a running service, until it fails
//! or the process is stopped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ballista_core::registry::BallistaFunctionRegistry;
use ballista_core::serde::protobuf::job_status;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::{create_scheduler, start_grpc_service_with_listener};
use ballista_scheduler::state::SchedulerState;
use datafusion_proto::protobuf::{LogicalPlanNode, PhysicalPlanNode};
use tokio::net::TcpListener;

use super::{session_config, session_state, Endpoint, TraceLogicalCodec, TracePhysicalCodec};
use crate::error::Error;
use crate::Result;

/// How often an executor tells the scheduler it is alive, and how long the scheduler waits
/// for word from one before it counts it lost and reruns its tasks elsewhere (Ballista's
/// defaults are 60 s and 180 s; a lost executor should not stall a query for minutes).
pub const HEARTBEAT_SECONDS: u64 = 5;
pub const EXECUTOR_TIMEOUT_SECONDS: u64 = 20;

/// How long a running job may go without a single task running anywhere in the cluster
/// before the scheduler fails it. Ballista 55.0.0 can strand a job after it loses an
/// executor (a stage rolled back whose rerun is never launched, or whose result is
/// dropped): the job stays `Running` and its client polls forever. No task running
/// cluster-wide for this long means nothing can make progress, so the job fails with a
/// one-line reason its client prints (measured: `scripts/cluster-demo.sh`).
pub const STALL_SECONDS: u64 = 30;

/// `tracesql cluster scheduler`.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Where the scheduler listens (port 0: any free port).
    pub bind: SocketAddr,
}

/// `tracesql cluster executor`.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    pub scheduler: Endpoint,
    /// Where the executor serves its results (Arrow Flight) to clients and other executors.
    pub bind: SocketAddr,
    /// The port of its control service, where the scheduler pushes tasks (same host).
    pub grpc_port: u16,
    /// The address others reach it at (default: the bind address).
    pub external_host: Option<String>,
    /// Tasks run at once (default: one per core).
    pub concurrent_tasks: Option<usize>,
    /// Where shuffle files go (default: a temporary directory).
    pub work_dir: Option<PathBuf>,
}

/// Bind the scheduler's port; the returned future serves it.
pub async fn bind_scheduler(
    options: &SchedulerOptions,
) -> Result<(SocketAddr, impl std::future::Future<Output = Result<()>>)> {
    let listener = TcpListener::bind(options.bind)
        .await
        .map_err(|e| Error::Usage(format!("cannot listen on {}: {e}", options.bind)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let mut config = SchedulerConfig::default()
        .with_hostname(addr.ip().to_string())
        .with_port(addr.port())
        .with_override_config_producer(Arc::new(session_config))
        .with_override_session_builder(Arc::new(session_state));
    config.bind_host = addr.ip().to_string();
    config.override_logical_codec = Some(Arc::new(TraceLogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(TracePhysicalCodec::default()));
    config.executor_timeout_seconds = EXECUTOR_TIMEOUT_SECONDS;
    config.expire_dead_executor_interval_seconds = HEARTBEAT_SECONDS;
    config.no_executors_grace_period_seconds = EXECUTOR_TIMEOUT_SECONDS;
    let config = Arc::new(config);
    let serve = async move {
        let cluster = BallistaCluster::new_from_config(&config)
            .await
            .map_err(ballista)?;
        let scheduler = create_scheduler::<LogicalPlanNode, PhysicalPlanNode>(cluster, config)
            .await
            .map_err(ballista)?;
        tokio::spawn(fail_stalled_jobs(
            scheduler.state.clone(),
            Duration::from_secs(STALL_SECONDS),
        ));
        start_grpc_service_with_listener(listener, scheduler)
            .await
            .map_err(ballista)
    };
    Ok((addr, serve))
}

/// Every few seconds: fail the running jobs during which no task has run anywhere for
/// `stall` (see [`STALL_SECONDS`]).
async fn fail_stalled_jobs(
    state: Arc<SchedulerState<LogicalPlanNode, PhysicalPlanNode>>,
    stall: Duration,
) {
    let mut last_busy = Instant::now();
    let mut first_seen: HashMap<String, Instant> = HashMap::new();
    let mut tick = tokio::time::interval(Duration::from_secs(HEARTBEAT_SECONDS));
    loop {
        tick.tick().await;
        let jobs = state.task_manager.get_running_job_cache();
        let mut running = Vec::new();
        for (job_id, info) in jobs.iter() {
            let graph = info.execution_graph.read().await;
            if !matches!(graph.status().status, Some(job_status::Status::Running(_))) {
                continue;
            }
            if !graph.running_tasks().is_empty() {
                last_busy = Instant::now();
            }
            running.push((job_id.as_str().to_string(), info.execution_graph.clone()));
        }
        let now = Instant::now();
        first_seen.retain(|id, _| running.iter().any(|(r, _)| r == id));
        for (job_id, graph) in running {
            let since = *first_seen.entry(job_id.clone()).or_insert(now);
            let idle = now.duration_since(since.max(last_busy));
            if idle < stall {
                continue;
            }
            let reason = format!(
                "no task of the cluster ran for {} s (an executor was lost and its work was \
                 not rescheduled); the scheduler gave up on the job: rerun the query",
                idle.as_secs()
            );
            log::warn!("job {job_id}: {reason}");
            graph.write().await.fail_job(reason);
            first_seen.remove(&job_id);
            // Saving the failed graph ends the job: its client hears of it (a pushed status,
            // or its next poll) and the job leaves the running ones.
            let state = state.clone();
            tokio::spawn(async move {
                if let Err(e) = state.task_manager.update_job(&job_id.as_str().into()).await {
                    log::warn!("job {job_id}: could not save its failure: {e}");
                }
            });
        }
    }
}

/// Run an executor until it fails or the process gets SIGINT/SIGTERM.
pub async fn run_executor(options: ExecutorOptions) -> Result<()> {
    let registry = BallistaFunctionRegistry::from(&session_state(session_config())?);
    let host = options.bind.ip().to_string();
    let config = ExecutorProcessConfig {
        bind_host: host.clone(),
        external_host: Some(options.external_host.clone().unwrap_or(host)),
        port: options.bind.port(),
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler.host.clone(),
        scheduler_port: options.scheduler.port,
        // The scheduler may start after its executors: they retry this long.
        scheduler_connect_timeout_seconds: 30,
        vcores: options.concurrent_tasks.unwrap_or(0),
        work_dir: options.work_dir.map(|d| d.display().to_string()),
        executor_heartbeat_interval_seconds: HEARTBEAT_SECONDS,
        override_function_registry: Some(Arc::new(registry)),
        override_config_producer: Some(Arc::new(session_config)),
        override_logical_codec: Some(Arc::new(TraceLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(TracePhysicalCodec::default())),
        ..Default::default()
    };
    start_executor_process(Arc::new(config))
        .await
        .map_err(ballista)
}

fn ballista(e: ballista_core::error::BallistaError) -> Error {
    Error::Sql(
        e.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// Print Ballista's log records of `level` and above on stderr (`TRACESQL_LOG`: error, warn,
/// info, debug; default warn), one line each: what an operator of the cluster reads.
pub fn log_to_stderr() {
    static LOGGER: StderrLog = StderrLog;
    let level = std::env::var("TRACESQL_LOG")
        .ok()
        .and_then(|l| l.parse::<log::LevelFilter>().ok())
        .unwrap_or(log::LevelFilter::Warn);
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}

struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let text = record.args().to_string();
            let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("{} {}: {line}", record.level(), record.target());
        }
    }

    fn flush(&self) {}
}
