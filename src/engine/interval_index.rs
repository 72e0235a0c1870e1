//! Engine: the index and the probe of [`super::interval_join`]: the build side's rows grouped
//! by the join keys and sorted by start (a slice, or a tree of greatest ends, per group), and
//! the probe that finds, for each probe row, the rows that meet its bounds.

use std::collections::HashMap;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, RecordBatch, RecordBatchOptions, UInt32Array,
};
use datafusion::arrow::compute::{filter as filter_array, take};
use datafusion::arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::common::JoinSide;
use datafusion::error::Result as DfResult;
use datafusion::physical_expr::PhysicalExprRef;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::metrics::{BaselineMetrics, Count};
use foldhash::fast::FixedState;

use super::interval_join::Bounds;

/// Per value of the join keys (as the bytes of a `RowConverter` row), a `T`.
type ByKey<T> = HashMap<Box<[u8]>, T, FixedState>;

/// A batch's join keys as rows of bytes, and the key columns (for their NULLs).
type KeyRows = (Rows, Vec<ArrayRef>);

/// The build side: its rows, and per value of the join keys the rows in start order.
#[derive(Debug)]
pub(super) struct Build {
    batch: RecordBatch,
    /// `None` without keys: one group of every row
    converter: Option<RowConverter>,
    groups: ByKey<Group>,
}

impl Build {
    pub(super) fn new(
        batch: RecordBatch,
        keys: &[PhysicalExprRef],
        bounds: &Bounds,
    ) -> DfResult<Build> {
        let start = bigints(&bounds.start, &batch)?;
        let end = bigints(&bounds.end, &batch)?;
        let (converter, rows) = key_rows(keys, &batch)?;
        let mut members: ByKey<Vec<(i64, i64, u32)>> = HashMap::default();
        let (start_values, end_values) = (
            start.as_primitive::<Int64Type>(),
            end.as_primitive::<Int64Type>(),
        );
        for i in 0..batch.num_rows() {
            // a NULL bound or key meets nothing (NULL compares false)
            if start.is_null(i) || end.is_null(i) {
                continue;
            }
            let Some(key) = key_of(&rows, i) else {
                continue;
            };
            let entry = (start_values.value(i), end_values.value(i), i as u32);
            members.entry(key.into()).or_default().push(entry);
        }
        let groups = members
            .into_iter()
            .map(|(key, mut rows)| {
                rows.sort_unstable();
                (key, Group::new(rows))
            })
            .collect();
        Ok(Build {
            batch,
            converter,
            groups,
        })
    }
}

/// One key's rows by start. When their ends come in order too (points, ranges that do not
/// nest) the rows that meet a probe row are a slice; else `max_end` is a tree of the greatest
/// end of each run of rows (leaves at `size + i`, node `n`'s children `2n` and `2n + 1`).
#[derive(Debug)]
struct Group {
    start: Vec<i64>,
    end: Vec<i64>,
    row: Vec<u32>,
    max_end: Option<Vec<i64>>,
}

impl Group {
    fn new(rows: Vec<(i64, i64, u32)>) -> Group {
        let start: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let end: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let max_end = (!end.is_sorted()).then(|| {
            let size = end.len().next_power_of_two();
            let mut tree = vec![i64::MIN; 2 * size];
            tree[size..size + end.len()].copy_from_slice(&end);
            for n in (1..size).rev() {
                tree[n] = tree[2 * n].max(tree[2 * n + 1]);
            }
            tree
        });
        Group {
            start,
            end,
            row: rows.iter().map(|r| r.2).collect(),
            max_end,
        }
    }

    /// Pushes the rows with `start <= hi` and `end >= lo`, in start order (`stack`: the
    /// descent's, kept from call to call).
    fn meeting(
        &self,
        hi: i64,
        lo: i64,
        stack: &mut Vec<(usize, usize, usize)>,
        out: &mut Vec<u32>,
    ) {
        let before = self.start.partition_point(|&s| s <= hi);
        let Some(max_end) = &self.max_end else {
            // ends in order: a slice
            let from = self.end[..before].partition_point(|&e| e < lo);
            out.extend_from_slice(&self.row[from..before]);
            return;
        };
        stack.push((1, 0, max_end.len() / 2));
        while let Some((node, first, width)) = stack.pop() {
            if first >= before || max_end[node] < lo {
                continue;
            }
            if width == 1 {
                out.push(self.row[first]);
                continue;
            }
            let half = width / 2;
            stack.push((2 * node + 1, first + half, half));
            stack.push((2 * node, first, half));
        }
    }
}

fn bigints(expr: &PhysicalExprRef, batch: &RecordBatch) -> DfResult<ArrayRef> {
    expr.evaluate(batch)?.into_array(batch.num_rows())
}

/// The join keys of every row as comparable bytes (`None` without keys).
fn key_rows(
    keys: &[PhysicalExprRef],
    batch: &RecordBatch,
) -> DfResult<(Option<RowConverter>, Option<KeyRows>)> {
    if keys.is_empty() {
        return Ok((None, None));
    }
    let columns = keys
        .iter()
        .map(|k| bigints(k, batch))
        .collect::<DfResult<Vec<_>>>()?;
    let converter = RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&columns)?;
    Ok((Some(converter), Some((rows, columns))))
}

/// Row `i`'s key, or `None` when one of its keys is NULL.
fn key_of(rows: &Option<KeyRows>, i: usize) -> Option<&[u8]> {
    match rows {
        None => Some(&[]),
        Some((_, columns)) if columns.iter().any(|c| c.is_null(i)) => None,
        Some((rows, _)) => Some(rows.row(i).data()),
    }
}

/// What each partition's probe stream needs.
pub(super) struct Joiner {
    pub(super) schema: SchemaRef,
    pub(super) filter: JoinFilter,
    pub(super) probe_keys: Vec<PhysicalExprRef>,
    pub(super) bounds: Bounds,
    pub(super) projection: Option<Vec<usize>>,
    pub(super) left_columns: usize,
    pub(super) batch_size: usize,
    pub(super) metrics: BaselineMetrics,
    pub(super) candidates: Count,
}

impl Joiner {
    /// The output rows of one probe batch, in batches of about `batch_size` pairs.
    pub(super) fn probe(&self, build: &Build, batch: &RecordBatch) -> DfResult<Vec<RecordBatch>> {
        let timer = self.metrics.elapsed_compute().timer();
        let hi = bigints(&self.bounds.hi, batch)?;
        let lo = bigints(&self.bounds.lo, batch)?;
        let (hi_values, lo_values) = (
            hi.as_primitive::<Int64Type>(),
            lo.as_primitive::<Int64Type>(),
        );
        let rows = match &build.converter {
            None => None,
            Some(converter) => {
                let columns = self
                    .probe_keys
                    .iter()
                    .map(|k| bigints(k, batch))
                    .collect::<DfResult<Vec<_>>>()?;
                Some((converter.convert_columns(&columns)?, columns))
            }
        };
        let (mut build_rows, mut probe_rows, mut parts) = (vec![], vec![], vec![]);
        let mut stack = vec![];
        // without keys, one group: looked up once, not per row
        let only_group = build.groups.get(&[][..]);
        for i in 0..batch.num_rows() {
            if hi.is_null(i) || lo.is_null(i) {
                continue;
            }
            let group = match (&rows, &only_group) {
                (None, group) => *group,
                (rows, _) => key_of(rows, i).and_then(|k| build.groups.get(k)),
            };
            let Some(group) = group else {
                continue;
            };
            // strict bounds as inclusive ones: start < hi is start <= hi - 1
            let hi = match self.bounds.start_strict {
                true => hi_values.value(i).checked_sub(1),
                false => Some(hi_values.value(i)),
            };
            let lo = match self.bounds.end_strict {
                true => lo_values.value(i).checked_add(1),
                false => Some(lo_values.value(i)),
            };
            let (Some(hi), Some(lo)) = (hi, lo) else {
                continue;
            };
            group.meeting(hi, lo, &mut stack, &mut build_rows);
            probe_rows.resize(build_rows.len(), i as u32);
            if build_rows.len() >= self.batch_size {
                parts.extend(self.matched(build, batch, &build_rows, &probe_rows)?);
                build_rows.clear();
                probe_rows.clear();
            }
        }
        if !build_rows.is_empty() {
            parts.extend(self.matched(build, batch, &build_rows, &probe_rows)?);
        }
        timer.done();
        self.metrics
            .record_output(parts.iter().map(RecordBatch::num_rows).sum());
        Ok(parts)
    }

    /// The pairs that meet and pass the rest of the filter, as output rows (none: `None`).
    fn matched(
        &self,
        build: &Build,
        batch: &RecordBatch,
        build_rows: &[u32],
        probe_rows: &[u32],
    ) -> DfResult<Option<RecordBatch>> {
        self.candidates.add(build_rows.len());
        let mut build_rows = UInt32Array::from(build_rows.to_vec());
        let mut probe_rows = UInt32Array::from(probe_rows.to_vec());
        if let Some(rest) = &self.bounds.rest {
            let columns = self
                .filter
                .column_indices()
                .iter()
                .map(|c| match c.side {
                    JoinSide::Left => take(build.batch.column(c.index), &build_rows, None),
                    _ => take(batch.column(c.index), &probe_rows, None),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let pairs = RecordBatch::try_new(self.filter.schema().clone(), columns)?;
            let keep = rest.evaluate(&pairs)?.into_array(pairs.num_rows())?;
            let keep = keep.as_boolean();
            build_rows = filter_array(&build_rows, keep)?.as_primitive().clone();
            probe_rows = filter_array(&probe_rows, keep)?.as_primitive().clone();
        }
        if build_rows.is_empty() {
            return Ok(None);
        }
        let all = self.left_columns + batch.num_columns();
        let wanted: Vec<usize> = match &self.projection {
            Some(p) => p.clone(),
            None => (0..all).collect(),
        };
        let columns = wanted
            .iter()
            .map(|&c| match c.checked_sub(self.left_columns) {
                None => take(build.batch.column(c), &build_rows, None),
                Some(p) => take(batch.column(p), &probe_rows, None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rows = RecordBatchOptions::new().with_row_count(Some(build_rows.len()));
        Ok(Some(RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &rows,
        )?))
    }
}
