//! Engine: sorts that a window's file order has mostly done already. Every writer of ours
//! writes a GPU activity table in time order per stream and says so in the file
//! ([`ROW_ORDER_KEY`], docs/engine.md "Known order"); the catalog passes each file's claim on
//! to the session ([`OrderClaims`]). A query that orders rows by stream and then by time
//! (`lag(end_ns) over (partition by stream_id order by start_ns)`) still makes DataFusion
//! sort them, comparing every row's keys in a sort and a merge.
//!
//! [`KnownStreamOrder`] puts a [`StreamSortExec`] (engine::stream_sort) in place of such a
//! sort: one pass deals each partition's rows out to their streams, keeping their order, and
//! checks the time order as it goes. A stream whose rows did not come in order is sorted
//! there, so the answer never rests on the claim; the claim only decides where the pass is
//! tried.
//!
//! ```text
//!   BoundedWindowAggExec                       BoundedWindowAggExec
//!     SortExec [stream, start]           ->      RepartitionExec hash(stream), preserve_order
//!       RepartitionExec hash(stream)               StreamSortExec [stream, start]
//!         DataSourceExec (row_order claim)           DataSourceExec (row_order claim)
//! ```
//!
//! The hash exchange merges its inputs' sorted runs (two on two cores) instead of a sort
//! merging one run per batch. Measured: see docs/engine.md "Known order".

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::{ConfigEntry, ConfigExtension, ConfigOptions, ExtensionOptions};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};
use datafusion::prelude::SessionContext;

use super::stream_sort::StreamSortExec;

/// The Parquet key-value metadata (and table schema metadata) that claims the order:
/// `<group columns>;<time columns>`, e.g. `device_id,context_id,stream_id;start_ns,end_ns`:
/// the rows of each group are in time order.
pub const ROW_ORDER_KEY: &str = "tracesql.row_order";

/// The order our writers claim for the GPU activity tables.
pub const STREAM_ROW_ORDER: &str = "device_id,context_id,stream_id;start_ns,end_ns";

/// The claims of a session's files, by the name a scan gives each file (its object store
/// location): the catalog fills them as it registers a window, [`KnownStreamOrder`] reads
/// them. A session option, so sessions keep their own; not a table schema's metadata, which
/// would travel into every result.
#[derive(Debug, Clone, Default)]
pub struct OrderClaims(Arc<RwLock<HashMap<String, String>>>);

impl OrderClaims {
    /// The claims of `ctx`'s session (every session of [`super::session`] has them).
    pub fn of(ctx: &SessionContext) -> Option<OrderClaims> {
        let state = ctx.state();
        state
            .config()
            .options()
            .extensions
            .get::<OrderClaims>()
            .cloned()
    }

    /// Record that the file at `location` claims `claim`.
    pub fn insert(&self, location: String, claim: String) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(location, claim);
    }

    /// The claim every file of `scan` makes, if they all make the same one.
    fn of_scan(&self, scan: &FileScanConfig) -> Option<Claim> {
        let claims = self.0.read().unwrap_or_else(|e| e.into_inner());
        let mut files = scan.file_groups.iter().flat_map(|g| g.iter());
        let first = claims.get(files.next()?.object_meta.location.as_ref())?;
        if !files.all(|f| claims.get(f.object_meta.location.as_ref()) == Some(first)) {
            return None;
        }
        Claim::parse(first)
    }
}

impl ExtensionOptions for OrderClaims {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone()) // the same claims: a session's copies of its state share them
    }

    fn set(&mut self, key: &str, _value: &str) -> DfResult<()> {
        Err(DataFusionError::Configuration(format!(
            "{}.{key}: the row order claims are read from the files, not set",
            Self::PREFIX
        )))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for OrderClaims {
    const PREFIX: &'static str = "tracesql_row_order";
}

/// A claim read back: the group columns and the time columns.
struct Claim {
    groups: Vec<String>,
    times: Vec<String>,
}

impl Claim {
    fn parse(text: &str) -> Option<Claim> {
        let (groups, times) = text.split_once(';')?;
        let names = |s: &str| -> Vec<String> {
            s.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from)
                .collect()
        };
        let claim = Claim {
            groups: names(groups),
            times: names(times),
        };
        (!claim.groups.is_empty() && !claim.times.is_empty()).then_some(claim)
    }

    /// How many leading keys are group columns, when they are followed by the first time
    /// column ascending (the shape the pass serves); None otherwise.
    fn group_keys(&self, keys: &[Key]) -> Option<usize> {
        let named = |i: usize| keys.get(i).and_then(|k| k.column.as_deref());
        let mut n = 0;
        while named(n).is_some_and(|c| self.groups.iter().any(|g| g == c)) {
            n += 1;
        }
        let time_first = named(n) == Some(self.times[0].as_str()) && !keys[n].descending;
        (n > 0 && time_first).then_some(n)
    }
}

/// A sort key as seen from one operator: the column it reads there (None: an expression).
#[derive(Clone)]
struct Key {
    column: Option<String>,
    index: Option<usize>,
    descending: bool,
}

impl Key {
    fn of(order: &LexOrdering, schema: &SchemaRef) -> Vec<Key> {
        (order.iter())
            .map(|e| {
                let index = e.expr.downcast_ref::<Column>().map(Column::index);
                Key {
                    column: index.and_then(|i| Some(schema.fields().get(i)?.name().clone())),
                    index,
                    descending: e.options.descending,
                }
            })
            .collect()
    }

    /// The key one operator down, where output column `i` is input column `map(i)`.
    fn through(&self, map: impl Fn(usize) -> Option<usize>, input: &SchemaRef) -> Key {
        let index = self.index.and_then(map);
        Key {
            column: index.and_then(|i| Some(input.fields().get(i)?.name().clone())),
            index,
            descending: self.descending,
        }
    }
}

/// How many leading `keys` (read at `plan`'s output) every scan under `plan` claims as its
/// groups, followed by its first time column: operators that keep each partition's rows in
/// order are passed through, with their renames; a union needs it of every input. `Some(None)`:
/// no rows at all (an empty table), which serves any order.
fn served(
    plan: &Arc<dyn ExecutionPlan>,
    keys: &[Key],
    claims: &OrderClaims,
) -> Option<Option<usize>> {
    let down = |child: &Arc<dyn ExecutionPlan>, map: &dyn Fn(usize) -> Option<usize>| {
        let input = child.schema();
        let keys: Vec<Key> = keys.iter().map(|k| k.through(map, &input)).collect();
        served(child, &keys, claims)
    };
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        let column = |i: usize| p.expr()[i].expr.downcast_ref::<Column>().map(Column::index);
        return down(p.input(), &column);
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        let projection = f.projection().clone();
        return down(f.input(), &|i| {
            Some(projection.as_ref().map_or(i, |p| p[i]))
        });
    }
    if plan.downcast_ref::<CooperativeExec>().is_some() {
        return down(&plan.children()[0].clone(), &Some);
    }
    if let Some(u) = plan.downcast_ref::<UnionExec>() {
        let mut agreed = None;
        for child in u.children() {
            match (down(child, &Some)?, agreed) {
                (None, _) => {}
                (Some(n), None) => agreed = Some(n),
                (Some(n), Some(m)) if n == m => {}
                _ => return None,
            }
        }
        return Some(agreed);
    }
    if plan.downcast_ref::<EmptyExec>().is_some() {
        return Some(None);
    }
    let scan = plan.downcast_ref::<DataSourceExec>()?;
    let files = scan.data_source().downcast_ref::<FileScanConfig>()?;
    let mut claim = claims.of_scan(files)?;
    // A partition column (window_id, rank) is one value per file: a group column too.
    (claim.groups).extend(
        files
            .table_partition_cols()
            .iter()
            .map(|f| f.name().clone()),
    );
    // The scan's own projection (`start_ns AS ts`), back to the table's columns.
    let keys: Vec<Key> = match files.file_source().projection() {
        Some(projection) => {
            let exprs = projection.as_ref();
            let column = |i: usize| {
                exprs
                    .get(i)?
                    .expr
                    .downcast_ref::<Column>()
                    .map(Column::index)
            };
            let table = files.file_source().table_schema().table_schema().clone();
            keys.iter().map(|k| k.through(column, &table)).collect()
        }
        None => keys.to_vec(),
    };
    claim.group_keys(&keys).map(Some)
}

/// Replaces a sort by stream and time over a scan that claims that order (see the module).
#[derive(Debug)]
pub struct KnownStreamOrder;

impl PhysicalOptimizerRule for KnownStreamOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let Some(claims) = config.extensions.get::<OrderClaims>() else {
            return Ok(plan);
        };
        plan.transform_up(|node| match replacement(&node, claims)? {
            Some(new) => Ok(Transformed::yes(new)),
            None => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "known_stream_order"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn replacement(
    node: &Arc<dyn ExecutionPlan>,
    claims: &OrderClaims,
) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    let Some(sort) = node.downcast_ref::<SortExec>() else {
        return Ok(None);
    };
    if sort.fetch().is_some() {
        return Ok(None); // a top-k keeps few rows; it is cheap already
    }
    // A hash exchange right below the sort is kept, above the pass, merging sorted inputs.
    let (below, exchange) = match sort.input().downcast_ref::<RepartitionExec>() {
        Some(r) if matches!(r.partitioning(), Partitioning::Hash(..)) && !r.preserve_order() => {
            (r.input().clone(), Some(r.partitioning().clone()))
        }
        _ => (sort.input().clone(), None),
    };
    let keys = Key::of(sort.expr(), &below.schema());
    let Some(Some(group_len)) = served(&below, &keys, claims) else {
        return Ok(None);
    };
    let order = sort.expr().clone();
    let mut new: Arc<dyn ExecutionPlan> =
        Arc::new(StreamSortExec::new(below, order.clone(), group_len));
    if let Some(partitioning) = exchange {
        new = Arc::new(RepartitionExec::try_new(new, partitioning)?.with_preserve_order());
    }
    if !sort.preserve_partitioning() && new.output_partitioning().partition_count() > 1 {
        new = Arc::new(SortPreservingMergeExec::new(order, new));
    }
    Ok(Some(new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::compute::SortOptions;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::PhysicalSortExpr;

    #[test]
    fn the_claim_serves_group_keys_followed_by_ascending_time() {
        let claim = Claim::parse(STREAM_ROW_ORDER).unwrap();
        let s: SchemaRef = Arc::new(Schema::new(
            (["stream_id", "start_ns", "end_ns"].iter())
                .map(|n| Field::new(*n, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        let order = |keys: &[(&str, bool)]| {
            LexOrdering::new(keys.iter().map(|(name, descending)| {
                let column = Arc::new(Column::new_with_schema(name, &s).unwrap());
                let options = SortOptions {
                    descending: *descending,
                    nulls_first: false,
                };
                PhysicalSortExpr::new(column, options)
            }))
            .unwrap()
        };
        let served = |keys: &[(&str, bool)]| claim.group_keys(&Key::of(&order(keys), &s));
        assert_eq!(
            served(&[("stream_id", false), ("start_ns", false)]),
            Some(1)
        );
        assert_eq!(
            served(&[("stream_id", true), ("start_ns", false), ("end_ns", false)]),
            Some(1)
        );
        assert_eq!(served(&[("start_ns", false)]), None, "no group key");
        assert_eq!(
            served(&[("stream_id", false), ("end_ns", false)]),
            None,
            "not start first"
        );
        assert_eq!(
            served(&[("stream_id", false), ("start_ns", true)]),
            None,
            "time descending"
        );
        assert!(Claim::parse("stream_id").is_none());
    }
}
