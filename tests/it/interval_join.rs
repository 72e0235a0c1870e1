//! Interval joins: a join by containment or overlap is planned as engine::interval_join's
//! operator and answers what DataFusion's own join answers, row for row, on random ranges
//! (nested, tied, empty, reversed, NULL), with and without equal keys, in both join modes.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::support::{random_below, rows};

/// `n` rows of (k, s, e, id): k in 0..3 or NULL, ranges from points to long ones around the
/// others (so they nest), ties, a few reversed (e < s) and a few NULL bounds.
fn ranges(seed: u64, n: usize) -> Vec<[Option<i64>; 4]> {
    let mut next = random_below(seed);
    (0..n as i64)
        .map(|id| {
            let key = (next(20) != 0).then(|| next(3));
            let s = next(1_000) * 10;
            let len = match next(10) {
                0 => 0,
                1 => -5,
                2 => next(5_000) * 10,
                _ => next(50) * 10,
            };
            let e = s + len;
            let (s, e) = match next(25) {
                0 => (None, Some(e)),
                1 => (Some(s), None),
                _ => (Some(s), Some(e)),
            };
            [key, s, e, Some(id)]
        })
        .collect()
}

/// A table of `rows` as (k, s, e, id) in `parts` partitions.
fn table(rows: &[[Option<i64>; 4]], parts: usize) -> Arc<MemTable> {
    let schema = Arc::new(Schema::new(
        ["k", "s", "e", "id"]
            .map(|name| Field::new(name, DataType::Int64, true))
            .to_vec(),
    ));
    let chunk = rows.len().div_ceil(parts);
    let partitions = rows
        .chunks(chunk)
        .map(|part| {
            let columns = (0..4)
                .map(|c| Arc::new(Int64Array::from_iter(part.iter().map(|r| r[c]))) as ArrayRef)
                .collect();
            vec![RecordBatch::try_new(schema.clone(), columns).unwrap()]
        })
        .collect();
    Arc::new(MemTable::try_new(schema, partitions).unwrap())
}

/// The questions: calls in ranges (either side built), strict bounds, no keys, overlaps,
/// expressions as bounds, filters beyond the bounds (bounds among them), only a count, and
/// ranges of one length (their ends in order: a slice, not the tree).
const QUERIES: [&str; 10] = [
    "select r.id, p.id from r join p on p.k = r.k and p.s >= r.s and p.s <= r.e",
    "select r.id, p.id from p join r on p.k = r.k where r.s < p.s and p.s < r.e",
    "select r.id, p.id from r join p on p.s between r.s and r.e",
    "select a.id, b.id, a.e - b.s from r a join p b on a.k = b.k and a.s < b.e and b.s < a.e",
    "select a.id, b.id from r a join p b on a.s <= b.e and a.e >= b.s and a.id % 3 <> b.id % 2",
    "select r.id, p.id from r join p on p.k = r.k \
     and coalesce(p.e, p.s) >= r.s + 10 and coalesce(p.e, p.s) < r.e - 10",
    "select count(*) from r join p on p.k = r.k and p.s >= r.s and p.s <= r.e",
    "select q.id, p.id from (select k, s, s + 70 as e, id from r) q join p on p.k = q.k \
     and p.s >= q.s and p.s <= q.e",
    "select r.id, p.id from r join p on p.s > r.s and p.s <= r.e and p.e < r.e + 20 \
     and p.s >= r.s",
    "select r.k, count(*), sum(p.e - p.s) from r join p on p.k = r.k and r.s <= p.e \
     and p.s <= r.e group by r.k",
];

async fn session(
    config: SessionConfig,
    ours: bool,
    r: &[[Option<i64>; 4]],
    p: &[[Option<i64>; 4]],
) -> SessionContext {
    let ctx = if ours {
        let mut state = tracesql::engine::query_session().state();
        *state.config_mut() = config;
        SessionContext::new_with_state(state)
    } else {
        SessionContext::new_with_config(config)
    };
    ctx.register_table("r", table(r, 3)).unwrap();
    ctx.register_table("p", table(p, 2)).unwrap();
    ctx
}

fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

#[tokio::test]
async fn interval_joins_answer_what_datafusion_answers() {
    for (seed, partitioned) in [(1, false), (2, true), (3, false), (4, true)] {
        let (r, p) = (ranges(seed, 700), ranges(seed + 100, 900));
        let config = SessionConfig::new()
            .with_target_partitions(4)
            .with_batch_size(64)
            // 0: every hash join is partitioned (both sides hashed by key)
            .set_usize(
                "datafusion.optimizer.hash_join_single_partition_threshold",
                if partitioned { 0 } else { 1 << 20 },
            )
            .set_usize(
                "datafusion.optimizer.hash_join_single_partition_threshold_rows",
                if partitioned { 0 } else { 1 << 20 },
            );
        let ours = session(config.clone(), true, &r, &p).await;
        let theirs = session(config, false, &r, &p).await;
        for sql in QUERIES {
            let plan = rows(&ours, &format!("explain {sql}")).await.join("\n");
            assert!(
                plan.contains("IntervalJoinExec"),
                "not an interval join: {sql}\n{plan}"
            );
            let (got, want) = (rows(&ours, sql).await, rows(&theirs, sql).await);
            assert!(
                !want.is_empty() && want != ["0"],
                "no rows to compare: {sql}"
            );
            assert_eq!(
                sorted(got),
                sorted(want),
                "seed {seed}, partitioned {partitioned}: {sql}"
            );
        }
    }
}

#[tokio::test]
async fn joins_without_both_bounds_are_left_alone() {
    let (r, p) = (ranges(5, 50), ranges(6, 50));
    let ours = session(SessionConfig::new(), true, &r, &p).await;
    for sql in [
        "select r.id, p.id from r join p on p.k = r.k and p.s >= r.s",
        "select r.id, p.id from r left join p on p.k = r.k and p.s >= r.s and p.s <= r.e",
        "select r.id, p.id from r join p on p.k = r.k and p.s + r.s >= r.e and p.s <= r.e",
    ] {
        let plan = rows(&ours, &format!("explain {sql}")).await.join("\n");
        assert!(!plan.contains("IntervalJoinExec"), "{sql}\n{plan}");
    }
}
