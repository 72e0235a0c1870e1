//! `diff --timeline`: one step of BASE above the same step of NEW in one trace (Chrome JSON or
//! `.pftrace`), each window's clock shifted so that the step starts at the same time, and the
//! kernels that changed renamed so they stand out.
//!
//! ```text
//! diff_step          -> the step shown: of the paired steps (--steps), the one whose change
//!                       of step time (summed over ranks) is the median, a typical step
//! _diff_step,
//! _diff_gpu_work,
//! cpu_event          -> per run and rank: the window holding the step, the step's start, and
//!                       the end of the step or of the last GPU op it launched, if later
//! diff_gpu_op        -> the marks: kernels added, removed, or whose time changed by at least
//!                       10 % and more than 1 µs, renamed `[+23% +12.0 µs] name` by a `--sql` script
//!                       joining them from a Parquet file
//!   -> export::export_pieces: BASE rank 0, NEW rank 0, BASE rank 1, ... one above the other,
//!      each window's GPU ops and API calls narrowed to the step (its CPU ops all kept)
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use parquet::arrow::ArrowWriter;

use super::{Diff, RUNS};
use crate::error::Error;
use crate::export::{MergeSummary, Offset, PftraceConfig, Piece, RowFilter};
use crate::window::{Window, WindowDir, WINDOW_KEY};
use crate::Result;

/// A paired kernel is marked when its time changed by at least this share of BASE's ...
const MARK_SHARE: f64 = 0.10;
/// ... and by more than this (ns): Kineto's times are whole µs, so 1 µs is their rounding.
const MARK_MIN_NS: i64 = 1_000;

/// What [`write_timeline`] wrote.
pub struct Timeline {
    /// the paired step shown
    pub step: i64,
    /// kernels renamed as changed, over every window
    pub marked: usize,
    pub summary: MergeSummary,
}

/// The rows of `sql` as text (NULL as "").
async fn rows(diff: &Diff, sql: &str) -> Result<Vec<Vec<String>>> {
    let mut out = Vec::new();
    for batch in diff.ctx.sql(sql).await?.collect().await? {
        let columns = (batch.columns().iter())
            .map(|c| cast(c, &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for row in 0..batch.num_rows() {
            let text = |c: &dyn Array| {
                let c = c.as_string::<i32>();
                match c.is_null(row) {
                    true => String::new(),
                    false => c.value(row).to_string(),
                }
            };
            out.push(columns.iter().map(|c| text(c.as_ref())).collect());
        }
    }
    Ok(out)
}

/// Whether partition value `a` (as the query gave it) is the folder's `b` (`rank=03` is 3).
fn same_value(a: &str, b: &str) -> bool {
    match (a.parse::<i64>(), b.parse::<i64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The window of `run` whose partition values (by `columns`, that run's names) are `values`.
fn window_of<'w>(run: &'w Window, columns: &[&str], values: &[String]) -> Result<&'w WindowDir> {
    let matches = |w: &WindowDir| {
        columns.iter().zip(values).all(|(column, value)| {
            (w.partitions.iter()).any(|(k, v)| k == column && same_value(value, v))
        })
    };
    let found: Vec<&WindowDir> = run.windows.iter().filter(|w| matches(w)).collect();
    match found.as_slice() {
        [one] => Ok(one),
        _ => Err(Error::Usage(format!(
            "--timeline: {} windows of {} have {}; expected one",
            found.len(),
            run.root.display(),
            (columns.iter().zip(values))
                .map(|(c, v)| format!("{c}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The marks of one window as a Parquet file at `path`: (stream, start, label) rows.
fn write_marks(path: &Path, marks: &[(i64, i64, String)]) -> Result<()> {
    let batch = RecordBatch::try_from_iter([
        (
            "stream_id",
            Arc::new(Int64Array::from_iter_values(marks.iter().map(|m| m.0))) as ArrayRef,
        ),
        (
            "start_ns",
            Arc::new(Int64Array::from_iter_values(marks.iter().map(|m| m.1))),
        ),
        (
            "label",
            Arc::new(StringArray::from_iter_values(marks.iter().map(|m| &m.2))),
        ),
    ])?;
    let io = |e: std::io::Error| Error::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None)
        .map_err(|e| Error::Internal(format!("{}: {e}", path.display())))?;
    writer
        .write(&batch)
        .and_then(|_| writer.close().map(|_| ()))
        .map_err(|e| Error::Internal(format!("{}: {e}", path.display())))
}

/// The `--sql` script that renames the kernels of one window marked in the Parquet file at
/// `marks` (a join, not a literal list: a window may have 100 000s of them).
fn mark_script(marks: &Path) -> String {
    let location = marks.display().to_string().replace('\'', "''");
    format!(
        "CREATE EXTERNAL TABLE _diff_marks STORED AS PARQUET LOCATION '{location}';\n\
         CREATE OR REPLACE VIEW kernel AS\n\
         SELECT k.* REPLACE (CONCAT(m.label, k.name) AS name)\n\
         FROM kernel k\n\
         LEFT JOIN _diff_marks m ON m.stream_id = k.stream_id AND m.start_ns = k.start_ns;\n"
    )
}

/// The label of a marked kernel: how it changed.
fn label(change: &str, base_dur: &str, new_dur: &str) -> String {
    match (change, base_dur.parse::<i64>(), new_dur.parse::<i64>()) {
        ("paired", Ok(b), Ok(n)) => format!(
            "[{:+.0}% {:+.1} µs] ",
            100.0 * (n - b) as f64 / b.max(1) as f64,
            (n - b) as f64 / 1000.0
        ),
        (change, _, _) => format!("[{change}] "),
    }
}

/// Kernels marked in one window: (stream, start, label).
type Marks = Vec<(i64, i64, String)>;

/// The step shown: of the paired steps, the one whose change of step time (summed over the
/// ranks) is the median.
async fn typical_step(diff: &Diff) -> Result<i64> {
    let sql = "SELECT step FROM diff_step GROUP BY step ORDER BY SUM(delta_ns), step";
    let steps = rows(diff, sql).await?;
    let Some(median) = steps.get(steps.len().saturating_sub(1) / 2) else {
        return Err(Error::Usage(
            "--timeline: the runs have no paired step to show (see --steps)".into(),
        ));
    };
    (median[0].parse()).map_err(|_| Error::Internal(format!("step {:?}", median[0])))
}

/// `, "k"` lists and `AND a.k = b.k` conditions over the pairing keys.
fn key_list(diff: &Diff, table: &str) -> String {
    (diff.keys.iter())
        .map(|k| format!("{table}\"{k}\", "))
        .collect()
}

fn same_keys(diff: &Diff, a: &str, b: &str) -> String {
    (diff.keys.iter())
        .map(|k| format!(" AND {a}.\"{k}\" = {b}.\"{k}\""))
        .collect()
}

/// Per run and rank, in the order shown (rank by rank, BASE first): run, the pairing keys'
/// values, the window_id (archives of several windows per rank), the step's start, and the
/// end of what to show (the step's end, or its last GPU op's if later).
async fn spans(diff: &Diff, step: i64, with_window: bool) -> Result<Vec<Vec<String>>> {
    let keys = key_list(diff, "s.");
    let (window_column, window_join) = match with_window {
        true => (
            format!("e.{WINDOW_KEY}, "),
            format!(
                "LEFT JOIN cpu_event e ON e.run = s.run{} AND e.ph = 'X' \
                 AND e.ts_ns = s.step_ts AND e.name = s.step_name",
                same_keys(diff, "e", "s")
            ),
        ),
        false => (String::new(), String::new()),
    };
    let sql = format!(
        "SELECT s.run, {keys}{window_column}s.step_ts, \
           GREATEST(s.step_end, COALESCE(MAX(w.ts + w.dur), s.step_end)) AS shown_end \
         FROM _diff_step s {window_join} \
         LEFT JOIN _diff_gpu_work w ON w.run = s.run AND w.step = s.step{} \
         WHERE s.step = {step} \
         GROUP BY s.run, {keys}{window_column}s.step_ts, s.step_end \
         ORDER BY {keys}s.run",
        same_keys(diff, "w", "s")
    );
    rows(diff, &sql).await
}

/// The kernels of step `step` to mark, by (run, pairing keys' values).
async fn marks(diff: &Diff, step: i64) -> Result<HashMap<(String, Vec<String>), Marks>> {
    let sql = format!(
        "SELECT {}change, base_stream_id, base_ts, new_stream_id, new_ts, base_dur, new_dur \
         FROM diff_gpu_op \
         WHERE step = {step} AND kind = 'kernel' AND (change <> 'paired' OR \
           (ABS(new_dur - base_dur) > {MARK_MIN_NS} \
            AND ABS(new_dur - base_dur) >= {MARK_SHARE} * base_dur))",
        key_list(diff, "")
    );
    let number = |text: &str| -> Result<i64> {
        (text.parse()).map_err(|_| Error::Internal(format!("diff_gpu_op: {text:?}")))
    };
    let mut marks: HashMap<(String, Vec<String>), Marks> = HashMap::new();
    for row in rows(diff, &sql).await? {
        let (rank, rest) = row.split_at(diff.keys.len());
        let [change, base_stream, base_ts, new_stream, new_ts, base_dur, new_dur] = rest else {
            return Err(Error::Internal("diff_gpu_op's columns".into()));
        };
        let label = label(change, base_dur, new_dur);
        if change != "added" {
            let mark = (number(base_stream)?, number(base_ts)?, label.clone());
            let key = (RUNS[0].to_string(), rank.to_vec());
            marks.entry(key).or_default().push(mark);
        }
        if change != "removed" {
            let mark = (number(new_stream)?, number(new_ts)?, label);
            let key = (RUNS[1].to_string(), rank.to_vec());
            marks.entry(key).or_default().push(mark);
        }
    }
    Ok(marks)
}

/// The window of `run` ("base" or "new") with the pairing keys' `rank` values and, in
/// archives of several windows per rank, `window_id`.
fn window_for(
    diff: &Diff,
    runs: [&Window; 2],
    run: &str,
    rank: &[String],
    window_id: &[String],
) -> Result<WindowDir> {
    let is_new = usize::from(run == RUNS[1]);
    let mut columns: Vec<&str> = Vec::new();
    let mut values: Vec<String> = Vec::new();
    for (key, value) in diff.keys.iter().zip(rank) {
        let pair = (diff.pairs.iter()).find(|p| &p.0 == key);
        let pair = pair.ok_or_else(|| Error::Internal(format!("key {key}")))?;
        columns.push(if is_new == 1 { &pair.1 } else { &pair.0 });
        values.push(value.clone());
    }
    if let [id] = window_id {
        columns.push(WINDOW_KEY);
        values.push(id.clone());
    }
    Ok(window_of(runs[is_new], &columns, &values)?.clone())
}

/// Write the timeline of one paired step of `diff` (`base`, `new`: its runs) to `output`: a
/// `.pftrace` when `pftrace` holds its settings, else Chrome JSON.
pub async fn write_timeline(
    diff: &Diff,
    base: &Window,
    new: &Window,
    output: &Path,
    pftrace: Option<&PftraceConfig>,
) -> Result<Timeline> {
    let step = typical_step(diff).await?;
    let with_window = diff.pairs.iter().any(|(b, _)| b == WINDOW_KEY);
    let spans = spans(diff, step, with_window).await?;
    let marks = marks(diff, step).await?;
    let scripts = tempfile::tempdir().map_err(|e| Error::io(Path::new("(temp dir)"), e))?;
    let mut pieces = Vec::new();
    let mut first_start = None;
    for (i, span) in spans.iter().enumerate() {
        let (run, rest) = span.split_first().expect("a run column");
        let (rank, rest) = rest.split_at(diff.keys.len());
        let (window_id, rest) = rest.split_at(usize::from(with_window));
        let (start, end): (i64, i64) = match rest {
            [start, end] => match (start.parse(), end.parse()) {
                (Ok(s), Ok(e)) => (s, e),
                _ => return Err(Error::Internal(format!("step {step}'s span: {span:?}"))),
            },
            _ => return Err(Error::Internal("the step's span".into())),
        };
        let window = window_for(diff, [base, new], run, rank, window_id)?;
        let script = match marks.get(&(run.clone(), rank.to_vec())) {
            Some(marks) => {
                let table = scripts.path().join(format!("marks-{i}.parquet"));
                write_marks(&table, marks)?;
                let path: PathBuf = scripts.path().join(format!("marks-{i}.sql"));
                std::fs::write(&path, mark_script(&table)).map_err(|e| Error::io(&path, e))?;
                Some(path)
            }
            None => None,
        };
        let first = *first_start.get_or_insert(start);
        let rank_label: String = (diff.keys.iter().zip(rank))
            .map(|(k, v)| match k.as_str() {
                "rank" => format!(" rank {v}"),
                _ => format!(" {k}={v}"),
            })
            .collect();
        pieces.push(Piece {
            window,
            label: format!("{run}{rank_label} step {step}"),
            offset: Offset {
                offset_ns: first - start,
                matched: None,
            },
            filter: RowFilter {
                predicate: Some(format!("end_ns > {start} AND start_ns < {end}")),
                script,
                critical_path: None,
            },
        });
    }
    let align = format!("diff step {step}: each window's step start");
    let summary = crate::export::export_pieces(&pieces, &align, output, pftrace).await?;
    Ok(Timeline {
        step,
        marked: marks.values().map(Vec::len).sum(),
        summary,
    })
}
