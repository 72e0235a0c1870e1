//! The catalog's schema, which builds a table or a view when a query first names it, not when
//! the window is opened: `tracesql query "select 1"` plans none of the views, and a query over
//! `kernel` plans only the views it reads (start-up figures: docs/engine.md, "First answer").
//!
//! Registered tables are kept as they are; a pending view is its SQL, planned (and its types
//! coerced, as `CREATE VIEW` does) on its first lookup, once, however many queries ask at the
//! same time. Listing the tables or their types plans nothing. A built-in view reads the
//! window's own tables and views, as it did when every view was planned at open, even after a
//! user replaced or dropped one of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::{exec_err, DataFusionError};
use datafusion::config::{CatalogOptions, ConfigOptions};
use datafusion::datasource::{TableType, ViewTable};
use datafusion::execution::session_state::SessionState;
use datafusion::optimizer::analyzer::type_coercion::TypeCoercion;
use datafusion::optimizer::analyzer::Analyzer;
use datafusion::prelude::SessionContext;
use parking_lot::{Mutex, RwLock};
use tokio::sync::OnceCell;

use crate::error::Error;
use crate::Result;

type Provider = Arc<dyn TableProvider>;
type Build = Box<dyn Fn() -> Result<Provider> + Send + Sync>;

/// A table or view not built yet.
struct Pending {
    kind: PendingKind,
    table_type: TableType,
    /// registered before [`seal`]: a built-in, planned against the window's own names
    own: bool,
    built: OnceCell<Provider>,
}

enum PendingKind {
    /// `query`, the view's `SELECT`; `statement`, its whole `CREATE VIEW` (the definition);
    /// `origin`, what a planning failure names (`sql/views/gpu_op.sql`).
    View {
        query: String,
        statement: String,
        origin: String,
    },
    Table(Build),
}

/// The default schema of a window's catalog (see the module's comment).
pub struct LazySchema {
    /// What queries see.
    public: Mutex<HashMap<String, Entry>>,
    /// What the window registered until [`seal`]: the names the built-in views read, whatever
    /// a user's `CREATE OR REPLACE` or `DROP` did to the public ones since. A view planned at
    /// open read these; one planned on first use reads them too.
    own: Mutex<HashMap<String, Entry>>,
    sealed: AtomicBool,
    /// The session the views are planned in (weak: the session holds this schema).
    state: Weak<RwLock<SessionState>>,
}

#[derive(Clone)]
enum Entry {
    Ready(Provider),
    Pending(Arc<Pending>),
}

tokio::task_local! {
    /// Set while a built-in view is planned: its names are looked up in `own` first.
    static PLANNING_OWN: ();
}

impl std::fmt::Debug for LazySchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazySchema")
            .field("public", &self.public.lock().keys().collect::<Vec<_>>())
            .field("own", &self.own.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Make `ctx`'s default schema a [`LazySchema`], empty.
pub fn install(ctx: &SessionContext) -> Result<()> {
    let options = catalog_options(ctx);
    let catalog = ctx
        .catalog(&options.default_catalog)
        .ok_or_else(|| Error::Internal(format!("no catalog {}", options.default_catalog)))?;
    let schema = LazySchema {
        public: Mutex::default(),
        own: Mutex::default(),
        sealed: AtomicBool::new(false),
        state: ctx.state_weak_ref(),
    };
    catalog.register_schema(&options.default_schema, Arc::new(schema))?;
    Ok(())
}

/// End the window's registrations in `ctx`: what is registered from now on (a user's view, a
/// report's helper) is not read by the built-in views.
pub fn seal(ctx: &SessionContext) {
    if let Some(schema) = lazy_schema(ctx) {
        schema.sealed.store(true, Ordering::Release);
    }
}

/// `ctx`'s [`LazySchema`], if [`install`] gave it one.
fn lazy_schema(ctx: &SessionContext) -> Option<Arc<LazySchema>> {
    let options = catalog_options(ctx);
    let schema = ctx
        .catalog(&options.default_catalog)?
        .schema(&options.default_schema)?;
    let any: Arc<dyn std::any::Any + Send + Sync> = schema;
    any.downcast::<LazySchema>().ok()
}

/// The names of `ctx`'s default catalog and schema (read in place: `ctx.state()` would copy
/// the whole session, its function registry included).
fn catalog_options(ctx: &SessionContext) -> CatalogOptions {
    ctx.state_ref().read().config().options().catalog.clone()
}

/// Create the view `name` (`statement` is `CREATE [OR REPLACE] VIEW name AS query`): planned
/// on first use in a lazy catalog, now in any other. A failure names `origin`.
pub async fn create_view(
    ctx: &SessionContext,
    name: &str,
    query: &str,
    statement: &str,
    origin: &str,
) -> Result<()> {
    let Some(schema) = lazy_schema(ctx) else {
        ctx.sql(statement)
            .await
            .map_err(|e| Error::Internal(format!("{origin}: {}", Error::from(e))))?;
        return Ok(());
    };
    let kind = PendingKind::View {
        query: query.to_string(),
        statement: statement.to_string(),
        origin: origin.to_string(),
    };
    schema.add_pending(name, kind, TableType::View);
    Ok(())
}

/// Register the table `build` makes: on first use in a lazy catalog, now in any other.
pub fn register_table(
    ctx: &SessionContext,
    name: &str,
    build: impl Fn() -> Result<Provider> + Send + Sync + 'static,
) -> Result<()> {
    match lazy_schema(ctx) {
        Some(schema) => {
            schema.add_pending(name, PendingKind::Table(Box::new(build)), TableType::Base)
        }
        None => {
            ctx.register_table(name, build()?)?;
        }
    }
    Ok(())
}

impl LazySchema {
    fn add_pending(&self, name: &str, kind: PendingKind, table_type: TableType) {
        let pending = Pending {
            kind,
            table_type,
            own: !self.sealed.load(Ordering::Acquire),
            built: OnceCell::new(),
        };
        self.insert(name, Entry::Pending(Arc::new(pending)));
    }

    fn insert(&self, name: &str, entry: Entry) {
        if !self.sealed.load(Ordering::Acquire) {
            self.own.lock().insert(name.to_string(), entry.clone());
        }
        self.public.lock().insert(name.to_string(), entry);
    }

    /// The entry `name` names for the query being planned.
    fn entry(&self, name: &str) -> Option<Entry> {
        if PLANNING_OWN.try_with(|_| ()).is_ok() {
            if let Some(entry) = self.own.lock().get(name) {
                return Some(entry.clone());
            }
        }
        self.public.lock().get(name).cloned()
    }

    async fn build(&self, pending: &Pending) -> Result<Provider> {
        match &pending.kind {
            PendingKind::Table(build) => build(),
            PendingKind::View {
                query,
                statement,
                origin,
            } => {
                let planned = self.plan_view(query, statement);
                let planned = if pending.own {
                    PLANNING_OWN.scope((), planned).await
                } else {
                    planned.await
                };
                planned.map_err(|e| Error::Internal(format!("{origin}: {e}")))
            }
        }
    }

    async fn plan_view(&self, query: &str, statement: &str) -> Result<Provider> {
        let state = self
            .state
            .upgrade()
            .ok_or_else(|| Error::Internal("the session of a view has ended".to_string()))?;
        // A copy, so that no lock is held while planning looks up the views this one reads.
        let state = state.read().clone();
        let plan = state.create_logical_plan(query).await?;
        // As `CREATE VIEW` does (SessionContext::create_view).
        let plan = Analyzer::with_rules(vec![Arc::new(TypeCoercion::new())]).execute_and_check(
            plan,
            &ConfigOptions::default(),
            |_, _| {},
        )?;
        Ok(Arc::new(ViewTable::new(plan, Some(statement.to_string()))))
    }
}

#[async_trait]
impl SchemaProvider for LazySchema {
    fn table_names(&self) -> Vec<String> {
        self.public.lock().keys().cloned().collect()
    }

    async fn table(&self, name: &str) -> datafusion::common::Result<Option<Provider>> {
        match self.entry(name) {
            None => Ok(None),
            Some(Entry::Ready(table)) => Ok(Some(table)),
            Some(Entry::Pending(pending)) => {
                let table = pending
                    .built
                    .get_or_try_init(|| self.build(&pending))
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Ok(Some(table.clone()))
            }
        }
    }

    async fn table_type(&self, name: &str) -> datafusion::common::Result<Option<TableType>> {
        Ok(self.public.lock().get(name).map(|entry| match entry {
            Entry::Ready(table) => table.table_type(),
            Entry::Pending(pending) => pending.table_type,
        }))
    }

    fn register_table(
        &self,
        name: String,
        table: Provider,
    ) -> datafusion::common::Result<Option<Provider>> {
        if self.table_exist(&name) {
            return exec_err!("The table {name} already exists");
        }
        self.insert(&name, Entry::Ready(table));
        Ok(None)
    }

    fn deregister_table(&self, name: &str) -> datafusion::common::Result<Option<Provider>> {
        if !self.sealed.load(Ordering::Acquire) {
            self.own.lock().remove(name);
        }
        Ok(match self.public.lock().remove(name) {
            Some(Entry::Ready(table)) => Some(table),
            Some(Entry::Pending(pending)) => pending.built.get().cloned(),
            None => None,
        })
    }

    fn table_exist(&self, name: &str) -> bool {
        self.public.lock().contains_key(name)
    }
}
