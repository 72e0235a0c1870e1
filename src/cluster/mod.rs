//! Stage `cluster`: the catalog and queries on Apache DataFusion Ballista, DataFusion's
//! distributed engine. A client registers a window or archive as locally (the same tables,
//! partition columns and views) in a session whose query planner sends each plan to a
//! Ballista scheduler; the scheduler plans it with [`session_state`] and hands its stages to
//! executors, which read the windows' files themselves (a path every machine can read).
//!
//! In: a `df://HOST:PORT` [`Endpoint`] and a [`Window`]. Out: a `SessionContext` whose
//! queries run on the cluster ([`open`]); or a scheduler or executor process ([`serve`]).
//!
//! What travels: views are expanded in the client's plan; listing and empty tables are
//! DataFusion's own plan nodes; `cpu_event`, `cpu_trace` and in-memory tables go through
//! [`codec::TraceLogicalCodec`]. The text-group aggregate (`engine::text_group`) is left out
//! of cluster plans: the scheduler plans with DataFusion's default physical rules.

mod codec;
pub mod convert;
pub mod serve;
mod tables;

use std::sync::Arc;
use std::time::Duration;

use ballista::prelude::{SessionConfigExt, SessionContextExt};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

pub use codec::{TraceLogicalCodec, TracePhysicalCodec};
pub use tables::{CpuTable, Recipe, Shipped};

use crate::error::Error;
use crate::window::Window;
use crate::Result;

/// How long a client waits for the scheduler's port before it says it cannot reach it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// A scheduler address, `df://HOST:PORT` (or `HOST:PORT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl std::str::FromStr for Endpoint {
    type Err = Error;

    fn from_str(text: &str) -> Result<Endpoint> {
        let bare = text.strip_prefix("df://").unwrap_or(text);
        let bare = bare.trim_end_matches('/');
        let bad = || Error::Usage(format!("--cluster {text}: expected df://HOST:PORT"));
        let (host, port) = bare.rsplit_once(':').ok_or_else(bad)?;
        let port = port.parse::<u16>().map_err(|_| bad())?;
        if host.is_empty() || bare.contains('/') {
            return Err(bad());
        }
        Ok(Endpoint {
            host: host.to_string(),
            port,
        })
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

impl Endpoint {
    /// Fail within [`CONNECT_TIMEOUT`] when nothing listens at the endpoint (Ballista's own
    /// client would retry for much longer before the first query fails).
    pub async fn check_reachable(&self) -> Result<()> {
        let unreachable = |why: String| {
            Error::Usage(format!(
                "cannot reach the cluster scheduler at {self}: {why}"
            ))
        };
        let connect = tokio::net::TcpStream::connect((self.host.as_str(), self.port));
        match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(unreachable(e.to_string())),
            Err(_) => Err(unreachable(format!(
                "no answer within {} s",
                CONNECT_TIMEOUT.as_secs()
            ))),
        }
    }
}

/// The session config of every cluster session: the catalog's settings, Ballista's
/// extension and our codecs, and Ballista's static planner.
///
/// Ballista 55.0.0's adaptive planner (its default) strands a job when an executor dies
/// mid-query (the rerun of a finished stage is dropped: "Can't find active stage to update
/// stage outputs"); its static planner reruns the lost work and the query succeeds
/// (`docs/cluster.md`, "Failures"). A client can still `SET
/// ballista.planner.adaptive.enabled = true` in a script.
pub fn session_config() -> SessionConfig {
    crate::engine::query_session()
        .state()
        .config()
        .clone()
        .upgrade_for_ballista()
        .with_ballista_adaptive_query_planner(false)
        .with_ballista_logical_extension_codec(Arc::new(TraceLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(TracePhysicalCodec::default()))
}

/// The state a scheduler plans a client's query in, and whose functions executors know:
/// DataFusion's defaults and Ballista's, with the settings the client sent (`config`). It
/// has no text-group rule: `TextGroupPartialExec` has no codec, so it stays local.
pub fn session_state(config: SessionConfig) -> datafusion::error::Result<SessionState> {
    let config = config
        .with_ballista_logical_extension_codec(Arc::new(TraceLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(TracePhysicalCodec::default()));
    let base = ballista_core::utils::default_session_builder(config)?;
    Ok(SessionStateBuilder::new_from_existing(base).build())
}

/// A session on the cluster at `endpoint` with every table of `window` and every view.
pub async fn open(endpoint: &Endpoint, window: &Window) -> Result<SessionContext> {
    endpoint.check_reachable().await?;
    let local = crate::engine::query_session().state();
    let state = SessionStateBuilder::new_from_existing(local)
        .with_config(session_config())
        .build();
    let url = format!("df://{endpoint}");
    let ctx = SessionContext::remote_with_state(&url, state).await?;
    crate::catalog::register_window(&ctx, window).await?;
    tables::ship_cpu_tables(&ctx, window).await?;
    crate::sql::register_views(&ctx, &window.partition_keys).await?;
    Ok(ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_with_or_without_the_scheme() {
        let e: Endpoint = "df://node7:50050".parse().unwrap();
        assert_eq!((e.host.as_str(), e.port), ("node7", 50050));
        let e: Endpoint = "127.0.0.1:1".parse().unwrap();
        assert_eq!(e.to_string(), "127.0.0.1:1");
        assert!("df://node7".parse::<Endpoint>().is_err());
        assert!("http://node7:1/x".parse::<Endpoint>().is_err());
    }

    #[tokio::test]
    async fn an_unreachable_scheduler_is_an_error_naming_it() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let e: Endpoint = format!("df://127.0.0.1:{port}").parse().unwrap();
        let err = e.check_reachable().await.unwrap_err().to_string();
        assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
