//! Stage `diff`: two runs (windows or archives) in one session, side by side, and the views
//! of `sql/diff/` that pair their steps and GPU work and split the change of step time by
//! cause.
//!
//! ```text
//! BASE, NEW (Window)
//!   -> each run's tables under its own schema: base.kernel, new.kernel, ...
//!   -> under the usual names, their union with a `run` column ('base' or 'new') as the first
//!      partition column: every view of sql/views/ serves both runs at once
//!   -> sql/diff/run/: each run's steps and GPU work, keyed for pairing
//!   -> sql/diff/: the runs paired (diff_gpu_op), the change by cause (diff_step,
//!      diff_summary) and per kernel, CPU op or stream (diff_by), with the noise test
//! ```
//!
//! Ranks pair by their partition values (both runs must have the same partition columns, or
//! `--pair` names the ones that pair, by each run's name); `window_id` takes no part, so an
//! archive of several windows per rank is one run per rank.

mod names;
mod page;
mod stats;
mod timeline;

use std::sync::Arc;

use datafusion::catalog::{MemorySchemaProvider, SchemaProvider};
use datafusion::prelude::SessionContext;

use crate::catalog::CpuEventTable;
use crate::error::Error;
use crate::window::{Window, WINDOW_KEY};
use crate::Result;

pub use names::kernel_name;
pub use page::{html, view_sql};
pub use stats::mann_whitney_p;
pub use timeline::{write_timeline, Timeline};

/// The runs' names, as schemas and as values of the `run` column.
pub const RUNS: [&str; 2] = ["base", "new"];

/// The views that several others read, computed once on their first read and held for the
/// session (see [`crate::engine::HeldView`]): as views, every reader ran them again, and
/// `--by op` over HTA's trace-diff pair took 26 s (debug build).
const HELD: [&str; 5] = [
    "_diff_step",
    "_diff_call_op",
    "_diff_gpu_work",
    "diff_gpu_op",
    "diff_step",
];

/// What to pair and how to judge it.
#[derive(Clone, Debug)]
pub struct Options {
    /// The CPU spans that are steps: a SQL LIKE pattern over their names.
    pub step_name: String,
    /// Which paired steps count (`3`, `2-5`, `1,3,7-9`); all when `None`.
    pub steps: Option<String>,
    /// A change is flagged when the noise test's p-value is below this.
    pub alpha: f64,
    /// The partition columns that pair ranks, (BASE's name, NEW's name); empty: all of them,
    /// by the same names.
    pub pair: Vec<(String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            step_name: "ProfilerStep#%".into(),
            steps: None,
            alpha: 0.05,
            pair: Vec::new(),
        }
    }
}

/// What [`open`] made: the session and the columns its diff views are keyed by.
pub struct Diff {
    pub ctx: SessionContext,
    /// The pairing keys: the paired partition columns but `window_id` (e.g. `rank`), by
    /// BASE's names.
    pub keys: Vec<String>,
    /// The paired partition columns, `window_id` included: (BASE's name, NEW's name).
    pub pairs: Vec<(String, String)>,
}

/// How the runs' partition columns pair: (BASE's column, NEW's column), window_id last when
/// both runs have it. By default every partition column, by its name in both runs; with
/// `--pair`, the columns named there (the others take no part in the diff).
fn pairing(
    base: &Window,
    new: &Window,
    pair: &[(String, String)],
) -> Result<Vec<(String, String)>> {
    let mut pairs: Vec<(String, String)> = if pair.is_empty() {
        let keys = |w: &Window| -> Vec<String> {
            w.partition_keys
                .iter()
                .filter(|k| *k != WINDOW_KEY)
                .cloned()
                .collect()
        };
        if keys(base) != keys(new) {
            return Err(Error::Usage(format!(
                "{} is partitioned by [{}], {} by [{}]: a diff pairs runs by their partition \
                 folders; name the columns that pair with --pair (e.g. --pair rank, or \
                 --pair rank=gpu when NEW calls it gpu)",
                base.root.display(),
                base.partition_keys.join(", "),
                new.root.display(),
                new.partition_keys.join(", "),
            )));
        }
        keys(base).into_iter().map(|k| (k.clone(), k)).collect()
    } else {
        for (run, window, column) in pair
            .iter()
            .flat_map(|(b, n)| [("BASE", base, b), ("NEW", new, n)])
        {
            if column == WINDOW_KEY || !window.partition_keys.contains(column) {
                return Err(Error::Usage(format!(
                    "--pair: {run} ({}) has no partition column {column:?}; its columns: [{}]",
                    window.root.display(),
                    window.partition_keys.join(", "),
                )));
            }
        }
        pair.to_vec()
    };
    let windows = |w: &Window| w.partition_keys.iter().any(|k| k == WINDOW_KEY);
    match (windows(base), windows(new)) {
        (true, true) => pairs.push((WINDOW_KEY.into(), WINDOW_KEY.into())),
        (false, false) => {}
        _ => {
            return Err(Error::Usage(format!(
                "{} and {}: one is a window, the other an archive; a diff pairs two windows \
                 or two archives",
                base.root.display(),
                new.root.display()
            )))
        }
    }
    Ok(pairs)
}

/// One session over `base` and `new` with every table, view and diff view registered.
pub async fn open(base: &Window, new: &Window, options: &Options) -> Result<Diff> {
    let pairs = pairing(base, new, &options.pair)?;
    let mut profile = crate::profile::Clock::start();
    let ctx = crate::engine::query_session();
    let catalog_name = ctx
        .state()
        .config()
        .options()
        .catalog
        .default_catalog
        .clone();
    let catalog = ctx
        .catalog(&catalog_name)
        .ok_or_else(|| Error::Internal("no default catalog".into()))?;
    let mut schemas = Vec::new();
    for (run, window) in RUNS.iter().zip([base, new]) {
        let schema = Arc::new(MemorySchemaProvider::new());
        copy_tables(window, schema.as_ref()).await?;
        catalog.register_schema(run, schema.clone())?;
        schemas.push(schema);
    }
    read_cpu_traces(&schemas).await?;
    profile.mark("open the runs (tables, CPU traces)");
    register_unions(&ctx, &schemas[0], &schemas[1], base, &pairs).await?;

    let mut partitions = vec!["run".to_string()];
    partitions.extend(pairs.iter().map(|(b, _)| b.clone()));
    crate::sql::register_views(&ctx, &partitions).await?;
    ctx.register_udf(names::udf());
    ctx.register_udf(stats::udf());
    let steps = steps_predicate(options.steps.as_deref())?;
    let param = |name: &str| match name {
        "step_name" => Some(format!("'{}'", options.step_name.replace('\'', "''"))),
        "steps" => Some(steps.clone()),
        "alpha" => Some(format!("{:?}", options.alpha)),
        _ => None,
    };
    let keys: Vec<String> = pairs
        .iter()
        .map(|(b, _)| b.clone())
        .filter(|k| k != WINDOW_KEY)
        .collect();
    for (objects, expanded_for) in [
        (crate::sql::DIFF_RUN, &partitions),
        (crate::sql::DIFF, &keys),
    ] {
        for object in objects {
            let text = crate::sql::expand_with(object.text, expanded_for, &param)?;
            let named = |e: Error| Error::Internal(format!("sql/{}: {e}", object.path));
            if HELD.contains(&object.name) {
                let header = format!("CREATE OR REPLACE VIEW {} AS", object.name);
                let query = text
                    .split_once(&header)
                    .map(|(_, q)| q)
                    .ok_or_else(|| named(Error::Internal(format!("does not start `{header}`"))))?;
                let plan = ctx.sql(query).await.map_err(|e| named(e.into()))?;
                crate::profile::explain(object.name, async || Ok(plan.clone())).await?;
                let held = crate::engine::HeldView::new(object.name, plan.into_unoptimized_plan());
                ctx.register_table(object.name, Arc::new(held))
                    .map_err(|e| named(e.into()))?;
            } else {
                ctx.sql(&text).await.map_err(|e| named(e.into()))?;
            }
        }
    }
    // the held views are computed when a query first reads them, each reported then
    profile.mark("plan the views");
    Ok(Diff { ctx, keys, pairs })
}

/// Register `window`'s tables in a scratch session and move them into `schema`.
async fn copy_tables(window: &Window, schema: &dyn SchemaProvider) -> Result<()> {
    let scratch = crate::engine::query_session();
    crate::catalog::register_window(&scratch, window).await?;
    let state = scratch.state();
    let options = state.config().options();
    let source = scratch
        .catalog(&options.catalog.default_catalog)
        .and_then(|c| c.schema(&options.catalog.default_schema))
        .ok_or_else(|| Error::Internal("no default schema".into()))?;
    for name in source.table_names() {
        if let Some(table) = source.table(&name).await? {
            schema.register_table(name, table)?;
        }
    }
    Ok(())
}

/// Both runs' CPU traces, read side by side: every view starts from the steps, which are in
/// them (read as the planner met them, one after the other, two 1 M-event windows' took
/// 0.37 s).
async fn read_cpu_traces(schemas: &[Arc<MemorySchemaProvider>]) -> Result<()> {
    let mut tables = Vec::new();
    for schema in schemas {
        tables.extend(schema.table("cpu_event").await?);
    }
    let read = crate::threads::on_threads(tables, |table| {
        let events = (table.as_ref() as &dyn std::any::Any).downcast_ref::<CpuEventTable>();
        events.map_or(Ok(()), |events| events.base_ns().map(|_| ()))
    });
    for result in read {
        result?;
    }
    Ok(())
}

/// Under each table's own name, both runs' rows with a `run` column first: the columns both
/// runs have, in BASE's order; of the partition columns, the paired ones (`pairs`: BASE's
/// name, NEW's), under BASE's names. `cbid` is the same table in both and is BASE's.
async fn register_unions(
    ctx: &SessionContext,
    base: &MemorySchemaProvider,
    new: &MemorySchemaProvider,
    base_window: &Window,
    pairs: &[(String, String)],
) -> Result<()> {
    let quote = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let mut names = base.table_names();
    names.sort();
    for name in names.iter().filter(|n| !n.starts_with("_raw_")) {
        let (Some(b), Some(n)) = (base.table(name).await?, new.table(name).await?) else {
            continue;
        };
        if name == "cbid" {
            ctx.register_table("cbid", b)?;
            continue;
        }
        let new_schema = n.schema();
        // (BASE's column, NEW's column) of every column the union keeps
        let columns: Vec<(String, String)> = b
            .schema()
            .fields()
            .iter()
            .filter_map(|f| {
                let column = f.name();
                let in_new = if base_window.partition_keys.contains(column) {
                    pairs
                        .iter()
                        .find(|(b, _)| b == column)
                        .map(|(_, n)| n.clone())?
                } else {
                    column.clone()
                };
                new_schema.field_with_name(&in_new).ok()?;
                Some((column.clone(), in_new))
            })
            .collect();
        let select = |pick: fn(&(String, String)) -> String| -> String {
            columns
                .iter()
                .map(|c| format!("{} AS {}", quote(&pick(c)), quote(&c.0)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let [b_run, n_run] = RUNS;
        // `run` as views, as the tables' text is: every join, sort and group of the diff has
        // it as its first key.
        ctx.sql(&format!(
            "CREATE VIEW \"{name}\" AS \
             SELECT arrow_cast('{b_run}', 'Utf8View') AS run, {} FROM {b_run}.\"{name}\" \
             UNION ALL SELECT arrow_cast('{n_run}', 'Utf8View') AS run, {} FROM {n_run}.\"{name}\"",
            select(|c| c.0.clone()),
            select(|c| c.1.clone()),
        ))
        .await?;
    }
    Ok(())
}

/// `--steps` as a SQL predicate over a `step` column: `3`, `2-5`, `1,3,7-9`.
pub fn steps_predicate(spec: Option<&str>) -> Result<String> {
    let Some(spec) = spec else {
        return Ok("TRUE".into());
    };
    let bad = || {
        Error::Usage(format!(
            "--steps {spec:?}: expected step numbers from 1 and ranges, e.g. 3, 2-5 or 1,3,7-9"
        ))
    };
    let number = |text: &str| text.trim().parse::<u64>().ok().filter(|n| *n >= 1);
    let mut terms = Vec::new();
    for part in spec.split(',') {
        match part.split_once('-') {
            Some((from, to)) => {
                let (from, to) = (number(from).ok_or_else(bad)?, number(to).ok_or_else(bad)?);
                if from > to {
                    return Err(bad());
                }
                terms.push(format!("step BETWEEN {from} AND {to}"));
            }
            None => terms.push(format!("step = {}", number(part).ok_or_else(bad)?)),
        }
    }
    Ok(format!("({})", terms.join(" OR ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_become_a_predicate() {
        assert_eq!(steps_predicate(None).unwrap(), "TRUE");
        assert_eq!(
            steps_predicate(Some("1,3-4")).unwrap(),
            "(step = 1 OR step BETWEEN 3 AND 4)"
        );
        for bad in ["", "0", "4-3", "a", "1,,2", "2-"] {
            assert!(steps_predicate(Some(bad)).is_err(), "{bad:?}");
        }
    }
}
