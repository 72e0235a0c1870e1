//! Engine: every way tracesql steers DataFusion's planner, in one place. The .sql files read
//! as plain joins; what makes them fast (or keeps their order) is set here, each item with
//! the measured figure, or the wrong answer, that justifies it.
//!
//! - [`query_session`]: `query`, `report`, `doctor`, the shell, import: the default planner
//!   plus the text-group rule;
//! - [`export_session`]: the export's session, set up once in its final form;
//! - [`import_session`]: the nsys import (its names are case-sensitive);
//! - [`sorting_after_unions`]: the doctor's examples (a DataFusion 55 planning bug);
//! - [`RowLookup`]: a scalar function standing in for a join;
//! - [`left_merge_join`]: a merge join the planner would not choose, over two queries
//!   already in key order;
//! - [`HeldView`]: a view computed once for all its readers (the reports' shared helpers);
//! - [`critical_path`]: a step's critical-path graph and its heaviest path, in one pass over
//!   its nodes (in SQL, 2.4 s of windows and self-joins at 1 M events for the edges alone;
//!   the path is a pass over the graph in dependency order, which SQL cannot take);
//! - [`last_seen`]: `LAST_VALUE(x IGNORE NULLS)` over a running frame, in one pass instead
//!   of one look back per row (the critical path's wait sources: 8.8 s -> ms at 229 k rows);
//! - [`row_number_among`]: `ROW_NUMBER()` per key over rows sorted without it (the diff's
//!   launches numbered per CPU op and kernel name, 767 k ops at 1 M events: 1.89 -> 1.74 s,
//!   medians, without sorting them by the names too);
//! - [`arg_max`]: the value of each group's row with the greatest keys, for
//!   `last_value(x ORDER BY ..)` over integer keys (the diff's innermost CPU op and
//!   annotation of each call: 650 ms of aggregate compute at 1 M events);
//! - [`stream_order`]: a sort by stream and time over files that claim that order per stream,
//!   done by one pass that deals rows out to their streams (`lag` per stream over 4 M kernels
//!   482 -> 272 ms, docs/engine.md);
//! - [`interval_join`]: a join by time containment or overlap through a sorted index of one
//!   side, not every pair (docs/engine.md, "Interval joins");
//! - [`running_window`]: `LAG`, `LEAD`, `ROW_NUMBER` and running `SUM`/`MIN`/`MAX`/`COUNT`
//!   over rows already in the window's order, a batch at a time instead of a row at a time
//!   (docs/engine.md, "Running windows");
//! - [`YieldPoints`]: a yield point after every operator of a query, so Ctrl-C stops it.

mod arg_max;
mod critical_path;
mod held_view;
mod interval_index;
mod interval_join;
pub mod last_seen;
mod merge_join;
mod row_lookup;
mod row_number_among;
mod running_window;
pub mod stream_order;
mod stream_sort;
pub mod text_group;
mod yield_points;

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

pub use held_view::HeldView;
pub use merge_join::left_merge_join;
pub use row_lookup::RowLookup;
pub use yield_points::YieldPoints;

/// The one input of a one-input operator's `with_new_children`, or the error that says it
/// was given another number.
pub fn one_input(
    operator: &str,
    mut children: Vec<Arc<dyn ExecutionPlan>>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    match (children.pop(), children.is_empty()) {
        (Some(input), true) => Ok(input),
        _ => Err(DataFusionError::Internal(format!(
            "{operator} has one input"
        ))),
    }
}

/// The session settings every command shares.
fn base_config() -> SessionConfig {
    SessionConfig::new()
        .with_information_schema(true)
        // where the catalog tells the planner which files claim their row order
        .with_option_extension(stream_order::OrderClaims::default())
        // Partition columns are compared as written in folder names (`window_id=000012`).
        .set_bool(
            "datafusion.execution.listing_table_ignore_subdirectory",
            true,
        )
        // A wrong answer: DataFusion 55 pushes a filter made of an aggregate's MIN/MAX of
        // plain columns into its scan even when another aggregate of it reads an expression
        // (apache/datafusion#24816). gpu_utilization's `MIN(ts), MAX(ts + dur)` then lost the
        // last ops at random: its bins' width differed in 5 of 6 runs of one 20 k-event window.
        .set_bool(
            "datafusion.optimizer.enable_aggregate_dynamic_filter_pushdown",
            false,
        )
}

/// Where a session's queries can be cancelled.
#[derive(PartialEq)]
enum Cancel {
    /// after any operator's batch (the shell cancels statements)
    Anywhere,
    /// where DataFusion puts yield points (an export is cancelled by leaving the process)
    AtScans,
}

fn session(config: SessionConfig, cancel: Cancel) -> SessionContext {
    let mut state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        // GROUP BY one text column groups rows by their string views instead of hashing the
        // bytes of every row: top kernels over 8.1 M kernels 462 -> 259 ms (aed0c2b).
        .with_physical_optimizer_rule(Arc::new(text_group::TextGroupRule))
        .with_physical_optimizer_rule(Arc::new(stream_order::KnownStreamOrder))
        // A join by time containment or overlap looks its pairs up in a sorted index instead
        // of trying the filter on every pair of a thread or device (docs/engine.md).
        .with_physical_optimizer_rule(Arc::new(interval_join::IntervalJoinRule))
        // Windows over rows in their order computed over whole batches, not row by row:
        // a running MAX per stream over 4.05 M kernels (docs/engine.md, "Running windows").
        .with_physical_optimizer_rule(Arc::new(running_window::RunningWindowRule));
    if cancel == Cancel::Anywhere {
        state = state.with_physical_optimizer_rule(Arc::new(YieldPoints));
    }
    SessionContext::new_with_state(state.build())
}

/// A session for trace queries: cancelled (the shell's Ctrl-C), a query stops computing
/// within ~128 batches of any operator ([`YieldPoints`]).
pub fn query_session() -> SessionContext {
    let ctx = session(base_config(), Cancel::Anywhere);
    ctx.register_udf(critical_path::udf());
    ctx.register_udwf(last_seen::udwf());
    ctx.register_udwf(row_number_among::udwf());
    ctx.register_udaf(arg_max::udaf());
    ctx
}

/// What the export's session depends on.
#[derive(Clone, Copy, Debug)]
pub struct ExportTuning {
    /// a row filter (`--where`, `--sql`) narrows the window
    pub filtered: bool,
}

/// The export's session, with every setting its plans rely on, fixed before any plan is
/// registered (nothing is SET later).
pub fn export_session(tuning: ExportTuning) -> SessionContext {
    let mut config = base_config();
    let options = config.options_mut();
    // Order, not speed: plans order rows by their place in the file (`file_row`, which the
    // scan counts: catalog::file_order), and several stream them on in that order without
    // sorting again (the held rows' readers, the render stages' merge join). Batches dealt
    // round-robin and gathered back would come in any order: with the rows numbered by a
    // `ROW_NUMBER() OVER ()` per plan, the .pftrace differed from run to run on large windows
    // (c847492).
    options.optimizer.repartition_file_scans = false;
    options.optimizer.enable_round_robin_repartition = false;
    // Joins build their hash table on the side estimated smaller. The export's filters keep
    // most rows (API calls not on the blocklist, ops with a graph node, ...); at the default
    // guess (a filter keeps 20%) the filtered API calls looked small and were held whole as
    // the build side (10 M .pftrace peak 2.65 -> 2.54 GB at 100, 80964d9).
    options.optimizer.default_filter_selectivity = 100;
    // Hash joins built on one side (the narrow one) keep the order of the other: the render
    // stages stream from the held render rows in event_id order and their ORDER BY sorts
    // nothing (10 M .pftrace 65 -> 54 s, peak 6.9 -> 4.7 GB, aed9203).
    options.optimizer.repartition_joins = false;
    if tuning.filtered {
        // Order again: one partition keeps file order through the filter's semi-joins.
        options.execution.target_partitions = 1;
    }
    session(config, Cancel::AtScans)
}

/// `ctx` (its catalog shared) with `repartition_sorts` off, for the doctor's examples. A
/// wrong plan, not speed: DataFusion 55 pushes a top-1 sort into the branches of a UNION and
/// drops the keys a branch holds constant (the `kind` literal, `dur` under `dur = 0`); the
/// merge above then fails its own sanity check (zero_duration on a one-file window). Sorting
/// after the union, as this setting does, plans.
pub fn sorting_after_unions(ctx: &SessionContext) -> SessionContext {
    let mut state = ctx.state();
    state.config_mut().options_mut().optimizer.repartition_sorts = false;
    SessionContext::new_with_state(state)
}

/// The nsys import's session: one partition per core (a part the loader read each), and
/// nsys's table and column names kept as written (identifiers are not lowercased).
pub fn import_session() -> SessionContext {
    let cores = crate::threads::cores();
    let mut config = SessionConfig::new().with_target_partitions(cores);
    config.options_mut().sql_parser.enable_ident_normalization = false;
    SessionContext::new_with_config(config)
}
