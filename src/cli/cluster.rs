//! `tracesql cluster`: run a Ballista scheduler or executor that knows tracesql's tables.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use tracesql::cluster::serve::{ExecutorOptions, SchedulerOptions};
use tracesql::cluster::Endpoint;

/// Run queries across machines (Apache DataFusion Ballista): one scheduler, any number of
/// executors; clients pass `--cluster df://HOST:PORT` to `query`. Every executor (and the
/// scheduler) must read the archive at the path the client gives (a shared filesystem).
///
/// Example (docs/cluster.md):
///   tracesql cluster scheduler --bind 0.0.0.0:50050
///   tracesql cluster executor --scheduler node0:50050 --bind 0.0.0.0:50051
///   tracesql query --cluster df://node0:50050 -w /shared/job7 "select count(*) from kernel"
#[derive(Args)]
#[command(verbatim_doc_comment)]
pub struct ClusterArgs {
    #[command(subcommand)]
    role: Role,
}

#[derive(Subcommand)]
enum Role {
    /// Plan queries and hand their tasks to executors
    Scheduler {
        /// Address to listen on
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
        bind: SocketAddr,
    },
    /// Run the tasks of a scheduler's queries
    Executor {
        /// The scheduler, HOST:PORT or df://HOST:PORT
        #[arg(long, value_name = "HOST:PORT")]
        scheduler: Endpoint,
        /// Address to serve results on (Arrow Flight)
        #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
        bind: SocketAddr,
        /// Port of the executor's control service, where the scheduler pushes tasks
        /// (default: the --bind port + 1)
        #[arg(long, value_name = "PORT")]
        grpc_port: Option<u16>,
        /// Host name others reach this executor at (default: the --bind address)
        #[arg(long, value_name = "HOST")]
        external_host: Option<String>,
        /// Tasks run at once (default: one per core)
        #[arg(long, value_name = "N")]
        concurrent_tasks: Option<usize>,
        /// Directory for shuffle files (default: a temporary directory)
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
    },
}

pub async fn run(args: ClusterArgs) -> anyhow::Result<()> {
    tracesql::cluster::serve::log_to_stderr();
    match args.role {
        Role::Scheduler { bind } => {
            let (addr, serve) =
                tracesql::cluster::serve::bind_scheduler(&SchedulerOptions { bind }).await?;
            eprintln!(
                "tracesql cluster scheduler listening on {addr} (clients: --cluster df://{addr})"
            );
            serve.await?;
        }
        Role::Executor {
            scheduler,
            bind,
            grpc_port,
            external_host,
            concurrent_tasks,
            work_dir,
        } => {
            let grpc_port = match grpc_port {
                Some(port) => port,
                None => bind
                    .port()
                    .checked_add(1)
                    .context("--bind: no port above it for --grpc-port")?,
            };
            eprintln!(
                "tracesql cluster executor on {bind} (tasks on port {grpc_port}), scheduler {scheduler}"
            );
            tracesql::cluster::serve::run_executor(ExecutorOptions {
                scheduler,
                bind,
                grpc_port,
                external_host,
                concurrent_tasks,
                work_dir,
            })
            .await?;
        }
    }
    Ok(())
}
