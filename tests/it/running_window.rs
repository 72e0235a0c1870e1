//! Running windows: `LAG`, `LEAD`, `ROW_NUMBER` and running aggregates are computed by
//! engine::running_window's operator and answer what DataFusion's own window answers, row for
//! row, on random rows (ties, NULL keys and values, partitions across batch ends); the shapes
//! it does not take are left to DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, Int64Array, RecordBatch, StringViewArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::support::{random_below, rows};

/// `n` rows of (id, k, j, s, e, st, nm): k in 0..4 or NULL, j in 0..2; s with ties; e
/// sometimes NULL, sometimes large enough that a SUM wraps; st a call stack's start (true) or
/// end marker, or NULL; nm an op's name (text views), or NULL.
fn table(seed: u64, n: i64, parts: usize) -> Arc<MemTable> {
    let mut next = random_below(seed);
    let rows: Vec<[Option<i64>; 5]> = (0..n)
        .map(|id| {
            let k = (next(10) != 0).then(|| next(4));
            let e = match next(12) {
                0 => None,
                1 => Some(i64::MAX - next(1000)),
                _ => Some(next(500) - 100),
            };
            [Some(id), k, Some(next(2)), Some(next(60)), e]
        })
        .collect();
    let mut fields: Vec<Field> = ["id", "k", "j", "s", "e"]
        .map(|name| Field::new(name, DataType::Int64, true))
        .to_vec();
    fields.push(Field::new("st", DataType::Boolean, true));
    fields.push(Field::new("nm", DataType::Utf8View, true));
    let schema = Arc::new(Schema::new(fields));
    let partitions = rows
        .chunks(rows.len().div_ceil(parts))
        .map(|part| {
            let mut columns: Vec<ArrayRef> = (0..5)
                .map(|c| Arc::new(Int64Array::from_iter(part.iter().map(|r| r[c]))) as ArrayRef)
                .collect();
            // markers and names from the id: starts twice as often as ends, some NULL
            let id = |r: &[Option<i64>; 5]| r[0].unwrap();
            columns.push(Arc::new(BooleanArray::from_iter(
                part.iter()
                    .map(|r| (id(r) % 11 != 5).then_some(id(r) % 3 != 0)),
            )));
            columns.push(Arc::new(StringViewArray::from_iter(part.iter().map(|r| {
                (id(r) % 13 != 7).then(|| format!("a long enough op name {}", id(r) % 17))
            }))));
            vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]
        })
        .collect();
    Arc::new(MemTable::try_new(schema, partitions).unwrap())
}

/// Questions the operator takes: every function, with one and two partition keys and none,
/// through this row and through the one before, a descending order.
const TAKEN: [&str; 7] = [
    "select id, lag(e) over w, lead(e) over w, row_number() over w from t \
     window w as (partition by k order by s, id)",
    "select id, max(e) over p, min(e) over p, sum(e) over p, count(e) over p, count(*) over p \
     from t window p as (partition by k, j order by s, id \
     rows between unbounded preceding and 1 preceding)",
    "select id, max(e) over c, min(e) over c, sum(e) over c, count(e) over c, count(*) over c \
     from t window c as (partition by k order by s desc, id rows unbounded preceding)",
    "select id, lead(s) over (order by s, id), lag(e) over (order by s, id), \
     row_number() over (order by s, id) from t",
    "select id, lead(e) over (partition by j order by s desc, id desc), \
     max(s + e) over (partition by j order by s desc, id desc \
     rows between unbounded preceding and 1 preceding) from t",
    "select id, lag(s) over (partition by k order by s, id) - e as gap from t",
    "select id, last_seen(e) over w, last_seen(nm) over w, \
     lag(st) over w, lead(nm) over w from t \
     window w as (partition by k order by s, id rows unbounded preceding)",
];

/// Shapes left to DataFusion: other offsets, a default, IGNORE NULLS, other frames and
/// functions, a RANGE frame (peers), a FILTER.
const LEFT: [&str; 7] = [
    "select id, lag(e, 2) over (partition by k order by s, id) from t",
    "select id, lead(e, 1, 0) over (partition by k order by s, id) from t",
    "select id, lag(e) ignore nulls over (partition by k order by s, id) from t",
    "select id, max(e) over (partition by k order by s, id \
     rows between 2 preceding and current row) from t",
    "select id, first_value(e) over (partition by k order by s, id) from t",
    "select id, sum(e) over (partition by k order by s) from t",
    "select id, count(*) filter (where e > 0) over (partition by k order by s, id \
     rows unbounded preceding) from t",
];

async fn session(config: SessionConfig, ours: bool, seed: u64, parts: usize) -> SessionContext {
    let ctx = if ours {
        let mut state = tracesql::engine::query_session().state();
        *state.config_mut() = config;
        SessionContext::new_with_state(state)
    } else {
        let ctx = SessionContext::new_with_config(config);
        ctx.register_udwf(tracesql::engine::last_seen::udwf());
        ctx
    };
    ctx.register_table("t", table(seed, 900, parts)).unwrap();
    ctx
}

fn by_id(mut rows: Vec<String>) -> Vec<String> {
    rows.sort_by_key(|r| r.split('|').next().unwrap().parse::<i64>().unwrap());
    rows
}

async fn plan(ctx: &SessionContext, sql: &str) -> String {
    rows(ctx, &format!("explain {sql}")).await.join("\n")
}

#[tokio::test]
async fn running_windows_answer_what_datafusion_answers() {
    for (seed, parts, batch) in [(1, 1, 7), (2, 3, 5), (3, 2, 64), (4, 4, 1)] {
        let config = SessionConfig::new()
            .with_target_partitions(3)
            .with_batch_size(batch);
        let ours = session(config.clone(), true, seed, parts).await;
        let theirs = session(config, false, seed, parts).await;
        for sql in TAKEN {
            let plan = plan(&ours, sql).await;
            assert!(
                plan.contains("RunningWindowExec") && !plan.contains("BoundedWindowAggExec"),
                "not a running window: {sql}\n{plan}"
            );
            let (got, want) = (rows(&ours, sql).await, rows(&theirs, sql).await);
            assert_eq!(want.len(), 900, "{sql}");
            assert_eq!(
                by_id(got),
                by_id(want),
                "seed {seed}, batches of {batch}: {sql}"
            );
        }
        for sql in LEFT {
            let plan = plan(&ours, sql).await;
            assert!(!plan.contains("RunningWindowExec"), "{sql}\n{plan}");
            let (got, want) = (rows(&ours, sql).await, rows(&theirs, sql).await);
            assert_eq!(by_id(got), by_id(want), "seed {seed}: {sql}");
        }
    }
}
