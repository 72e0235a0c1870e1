//! Stage `export`, merged: every window of an archive (ranks, or several windows of one rank)
//! as one Chrome trace. The windows are encoded one after another, each in an export session
//! of its own that is gone before the next starts (so the peak is about one window's), by
//! the single-window pipeline with a [`Remap`] in its sink: each window's processes, flows and
//! sort order are kept apart and named after its partition (`rank 3 · python`), and its
//! times shifted onto the first window's clock (`--align`, [`super::align`]). The encoded
//! windows are joined, in order, into one document framed by the first window's CPU-trace
//! members plus `tracesqlMerge`, which records each window's partition, renaming and shift.
//!
//! In: an archive, a row filter (its conjuncts over partition columns pick windows, the rest
//! narrow each window), an alignment. Out: one Chrome trace, written atomically.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::align::{self, Offset};
use super::{encode_window, refuse_writing_into_inputs, RowFilter};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::remap::{FLOW_STRIDE, PID_STRIDE, SORT_STRIDE};
use crate::sink::chrome::{Frame, Remap};
use crate::window::{find_windows, WindowDir, WINDOW_KEY};
use crate::Result;

/// How the windows' clocks are put on one timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Align {
    /// as recorded (right when the windows come from one host's clock)
    #[default]
    Wall,
    /// each window shifted so its NCCL collectives end when the first window's do
    Collectives,
    /// offsets per partition read from a file ([`super::align`] documents the format)
    File(PathBuf),
}

impl Align {
    /// `wall`, `collectives`, else a file's path.
    pub fn parse(text: &str) -> Align {
        match text {
            "wall" => Align::Wall,
            "collectives" => Align::Collectives,
            path => Align::File(PathBuf::from(path)),
        }
    }

    pub(super) fn name(&self) -> String {
        match self {
            Align::Wall => "wall".into(),
            Align::Collectives => "collectives".into(),
            Align::File(path) => path.display().to_string(),
        }
    }
}

/// What to merge and where.
#[derive(Clone, Debug, Default)]
pub struct MergeConfig {
    pub archive: PathBuf,
    pub output: PathBuf,
    /// `traceName`; the output path as given when None
    pub trace_name: Option<String>,
    /// partition-column conjuncts pick windows; the others narrow each window
    pub filter: RowFilter,
    pub align: Align,
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeSummary {
    pub events: u64,
    /// the document's bytes before compression (Chrome: its events'; .pftrace: its packets')
    pub bytes: Option<u64>,
    pub windows: Vec<MergedWindow>,
}

/// One window of a merged trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedWindow {
    /// its partition path in the archive (`rank=3/window_id=000001`)
    pub partition: String,
    /// what its tracks are named after (`rank 3`)
    pub label: String,
    /// the alignment's offset, ns (0 for the first window, and with `--align wall`)
    pub offset_ns: i64,
    /// the collectives the offset was taken from (`--align collectives`)
    pub matched: Option<usize>,
    /// the shift applied to its timestamps, ns: its base minus the first's, plus the offset
    pub shift_ns: i64,
    pub events: u64,
    /// its CPU trace's members the merged document has only one of (`distributedInfo`,
    /// `deviceProperties`), as JSON text, kept in the merge record
    pub metadata: Vec<(String, String)>,
}

/// The CPU-trace members each window keeps in the merge record.
const PER_WINDOW_MEMBERS: [&str; 2] = ["distributedInfo", "deviceProperties"];

/// Export every window of the archive at `config.archive` as one Chrome trace.
pub async fn export_merged_chrome(config: &MergeConfig) -> Result<MergeSummary> {
    refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    let (summary, _) = write_merged(config, None)
        .await
        .map_err(|e| e.at_output(&config.output))?;
    Ok(summary)
}

/// [`export_merged_chrome`], split into parts of at most `max_bytes` of JSON each.
pub async fn export_merged_chrome_split(
    config: &MergeConfig,
    max_bytes: u64,
) -> Result<(MergeSummary, super::split::SplitSummary)> {
    refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    let (summary, parts) = write_merged(config, Some(max_bytes))
        .await
        .map_err(|e| e.at_output(&config.output))?;
    Ok((summary, parts.expect("a split export lists its parts")))
}

/// One window of a merged trace: where it is, what its tracks are named after, how its
/// clock is shifted and what of it is kept.
#[derive(Clone, Debug)]
pub struct Piece {
    pub window: WindowDir,
    pub label: String,
    pub offset: Offset,
    pub filter: RowFilter,
}

/// The archive's windows `config` picks, as pieces of a merged trace.
pub(super) async fn pieces(
    config: &MergeConfig,
    found: &crate::window::Found,
) -> Result<Vec<Piece>> {
    let (windows, filter) = select_windows(&found.partition_keys, &found.windows, &config.filter)
        .await
        .map_err(|e| match e {
            Error::Usage(m) => Error::Usage(m),
            other => Error::Usage(format!("--where: {other}")),
        })?;
    if windows.is_empty() {
        return Err(Error::Usage(format!(
            "--where {:?} keeps no window of {}",
            config.filter.predicate.as_deref().unwrap_or_default(),
            config.archive.display()
        )));
    }
    let labels = labels(&windows);
    let partitions: Vec<String> = windows.iter().map(|w| partition_path(w)).collect();
    let offsets = align::offsets(&config.align, &windows, &partitions).await?;
    Ok((windows.into_iter().zip(labels).zip(offsets))
        .map(|((window, label), offset)| Piece {
            window: window.clone(),
            label,
            offset,
            filter: filter.clone(),
        })
        .collect())
}

/// The merged trace, whole or (`split`: at most so many bytes each) in parts.
async fn write_merged(
    config: &MergeConfig,
    split: Option<u64>,
) -> Result<(MergeSummary, Option<super::split::SplitSummary>)> {
    let found = find_windows(&config.archive)?;
    let pieces = pieces(config, &found).await?;
    let trace_name =
        (config.trace_name.clone()).unwrap_or_else(|| config.output.display().to_string());
    write_pieces(
        &pieces,
        &config.align.name(),
        &config.output,
        &trace_name,
        split,
    )
    .await
}

/// `pieces` as one Chrome trace at `output`, whole or (`split`: at most so many bytes each)
/// in parts; `align` names how their clocks were put on one timeline (the merge record's).
pub(crate) async fn write_pieces(
    pieces: &[Piece],
    align: &str,
    output: &std::path::Path,
    trace_name: &str,
    split: Option<u64>,
) -> Result<(MergeSummary, Option<super::split::SplitSummary>)> {
    let mut base0: Option<i64> = None;
    let mut first_members = None;
    let (mut parts, mut merged) = (Vec::new(), Vec::new());
    let mut join_sink = None;
    let mut bytes = 0u64;
    for (ordinal, piece) in pieces.iter().enumerate() {
        let Offset { offset_ns, matched } = piece.offset;
        let mut shift_ns = 0;
        let prefix = format!("{} · ", piece.label);
        let index = split.is_some();
        let path = &piece.window.path;
        let encoded = encode_window(path, &piece.filter, output, index, |base| {
            let first = *base0.get_or_insert(base);
            shift_ns = base - first + offset_ns;
            Ok(Some(Arc::new(Remap {
                ordinal: u32::try_from(ordinal).expect("fewer than 2^32 windows"),
                prefix,
                shift_ns,
            })))
        })
        .await?;
        let events = encoded.events();
        bytes += encoded.bytes() + 1;
        let sink = join_sink.get_or_insert_with(|| {
            let mut sink = encoded.sink.clone();
            sink.remap = None;
            sink
        });
        parts.push(sink.concat(encoded.segments)?);
        let metadata = (encoded.members.iter())
            .filter(|(k, _)| PER_WINDOW_MEMBERS.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
            .collect();
        first_members.get_or_insert(encoded.members);
        crate::memory::return_free_memory();
        merged.push(MergedWindow {
            partition: partition_path(&piece.window),
            label: piece.label.clone(),
            offset_ns,
            matched,
            shift_ns,
            events,
            metadata,
        });
    }
    let sink = join_sink.expect("at least one window");
    let members = first_members.expect("at least one window");
    let record = merge_record(align, &merged).to_string();
    let mut members: Vec<(&str, Option<&str>)> = (members.iter())
        .filter(|(k, _)| k != "distributedInfo")
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect();
    members.push(("tracesqlMerge", Some(&record)));
    let frame = Frame::new(members, trace_name);
    let listed = match split {
        Some(max_bytes) => Some(super::split::write_parts(&frame, parts, output, max_bytes)?),
        None => {
            let mut file = AtomicFile::create(output)?;
            sink.join(file.file(), &frame, parts, output)?;
            file.commit()?;
            None
        }
    };
    let summary = MergeSummary {
        events: merged.iter().map(|w| w.events).sum(),
        bytes: Some(bytes),
        windows: merged,
    };
    Ok((summary, listed))
}

/// The `tracesqlMerge` member: how each window was renamed and shifted.
pub(super) fn merge_record(align: &str, windows: &[MergedWindow]) -> serde_json::Value {
    let windows: Vec<serde_json::Value> = (windows.iter().enumerate())
        .map(|(ordinal, w)| {
            let mut record = serde_json::json!({
                "partition": w.partition,
                "label": w.label,
                "ordinal": ordinal,
                "offset_ns": w.offset_ns,
                "collectives_matched": w.matched,
                "shift_ns": w.shift_ns,
                "events": w.events,
            });
            for (key, text) in &w.metadata {
                if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
                    record[key.as_str()] = value;
                }
            }
            record
        })
        .collect();
    serde_json::json!({
        "align": align,
        "pid": format!("(ordinal + 1) * {PID_STRIDE} + pid"),
        "flow_id": format!("ordinal * {FLOW_STRIDE} + id"),
        "sort_index": format!("ordinal * {SORT_STRIDE} + sort_index"),
        "windows": windows,
    })
}

/// `rank=3/window_id=000001`
pub(super) fn partition_path(window: &WindowDir) -> String {
    (window.partitions.iter())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("/")
}

/// What each window's tracks are named after: its partition values that differ between the
/// windows (`rank 3`; `window 000002` for several windows of one rank; `host=h1 rank 3`),
/// else its rank, else its whole partition path.
pub(super) fn labels(windows: &[&WindowDir]) -> Vec<String> {
    let keys: Vec<&str> = (windows[0].partitions.iter())
        .map(|(k, _)| k.as_str())
        .collect();
    let value = |w: &WindowDir, i: usize| w.partitions.get(i).map(|(_, v)| v.clone());
    let mut shown: Vec<usize> = (0..keys.len())
        .filter(|&i| windows.iter().any(|w| value(w, i) != value(windows[0], i)))
        .collect();
    if shown.is_empty() {
        shown = match keys.iter().position(|k| *k == "rank") {
            Some(i) => vec![i],
            None => (0..keys.len()).collect(),
        };
    }
    (windows.iter())
        .map(|w| {
            let parts: Vec<String> = (shown.iter())
                .filter_map(|&i| w.partitions.get(i))
                .map(|(k, v)| match k.as_str() {
                    "rank" => format!("rank {v}"),
                    WINDOW_KEY => format!("window {v}"),
                    _ => format!("{k}={v}"),
                })
                .collect();
            match parts.is_empty() {
                true => w.path.display().to_string(),
                false => parts.join(" "),
            }
        })
        .collect()
}

/// The windows `filter`'s predicate keeps, and the filter each is exported with: the
/// predicate's top-level conjuncts that read only partition columns pick windows; the others
/// (over GPU ops and API calls) narrow every window.
pub(super) async fn select_windows<'w>(
    keys: &[String],
    windows: &'w [WindowDir],
    filter: &RowFilter,
) -> Result<(Vec<&'w WindowDir>, RowFilter)> {
    let all: Vec<&WindowDir> = windows.iter().collect();
    let Some(predicate) = &filter.predicate else {
        return Ok((all, filter.clone()));
    };
    let conjuncts = conjuncts(predicate)?;
    let ctx = SessionContext::new();
    ctx.register_table("_partition", Arc::new(partition_table(keys, windows)?))?;
    let (mut on_windows, mut on_ops) = (Vec::new(), Vec::new());
    for conjunct in conjuncts {
        let sql = format!("SELECT _ordinal FROM _partition WHERE {conjunct}");
        match ctx.sql(&sql).await {
            Ok(_) => on_windows.push(format!("({conjunct})")),
            Err(_) => on_ops.push(format!("({conjunct})")),
        }
    }
    let narrowed = RowFilter {
        predicate: (!on_ops.is_empty()).then(|| on_ops.join(" AND ")),
        script: filter.script.clone(),
        critical_path: filter.critical_path.clone(),
    };
    if on_windows.is_empty() {
        return Ok((all, narrowed));
    }
    let sql = format!(
        "SELECT _ordinal FROM _partition WHERE {} ORDER BY _ordinal",
        on_windows.join(" AND ")
    );
    let batches = ctx.sql(&sql).await?.collect().await?;
    let kept: Vec<&WindowDir> = (batches.iter())
        .flat_map(|b| b.column(0).as_primitive::<Int64Type>().values().to_vec())
        .map(|i| &windows[i as usize])
        .collect();
    Ok((kept, narrowed))
}

/// The predicate's top-level `AND` operands, as SQL text.
fn conjuncts(predicate: &str) -> Result<Vec<String>> {
    let expr = Parser::new(&GenericDialect {})
        .try_with_sql(predicate)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| Error::Usage(format!("--where {predicate:?}: {e}")))?;
    fn split(expr: Expr, out: &mut Vec<String>) {
        match expr {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                split(*left, out);
                split(*right, out);
            }
            Expr::Nested(inner)
                if matches!(
                    *inner,
                    Expr::BinaryOp {
                        op: BinaryOperator::And,
                        ..
                    }
                ) =>
            {
                split(*inner, out)
            }
            other => out.push(other.to_string()),
        }
    }
    let mut out = Vec::new();
    split(expr, &mut out);
    Ok(out)
}

/// One row per window: `_ordinal` and its partition values, as numbers where every
/// window's value of that key is one (as the catalog types them).
fn partition_table(keys: &[String], windows: &[WindowDir]) -> Result<MemTable> {
    let mut columns: Vec<(String, ArrayRef)> = vec![(
        "_ordinal".into(),
        Arc::new(Int64Array::from_iter_values(0..windows.len() as i64)),
    )];
    for (i, key) in keys.iter().enumerate() {
        let values: Vec<&str> = (windows.iter())
            .map(|w| w.partitions.get(i).map_or("", |(_, v)| v.as_str()))
            .collect();
        let numbers: Option<Vec<i64>> = values.iter().map(|v| v.parse().ok()).collect();
        let array: ArrayRef = match numbers {
            Some(numbers) => Arc::new(Int64Array::from(numbers)),
            None => Arc::new(StringArray::from(values)),
        };
        columns.push((key.clone(), array));
    }
    let batch = RecordBatch::try_from_iter(columns)?;
    Ok(MemTable::try_new(batch.schema(), vec![vec![batch]])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(parts: &[(&str, &str)]) -> WindowDir {
        WindowDir {
            path: PathBuf::from("/a"),
            partitions: parts
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            table_files: Vec::new(),
            cpu_trace: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn windows_are_labelled_by_the_partition_values_that_differ() {
        let a = dir(&[("rank", "0"), ("window_id", "000001")]);
        let b = dir(&[("rank", "1"), ("window_id", "000001")]);
        assert_eq!(labels(&[&a, &b]), ["rank 0", "rank 1"]);
        let c = dir(&[("rank", "0"), ("window_id", "000002")]);
        assert_eq!(labels(&[&a, &c]), ["window 000001", "window 000002"]);
        assert_eq!(labels(&[&a]), ["rank 0"]);
    }

    #[tokio::test]
    async fn partition_conjuncts_pick_windows_and_the_rest_narrow_them() {
        let windows: Vec<WindowDir> = (0..4)
            .map(|r| dir(&[("rank", &r.to_string()), ("window_id", "000001")]))
            .collect();
        let keys = vec!["rank".to_string(), "window_id".to_string()];
        let filter = RowFilter {
            predicate: Some("rank in (1, 3) AND name like '%nccl%'".into()),
            ..Default::default()
        };
        let (kept, narrowed) = select_windows(&keys, &windows, &filter).await.unwrap();
        let ranks: Vec<&str> = kept.iter().map(|w| w.partitions[0].1.as_str()).collect();
        assert_eq!(ranks, ["1", "3"]);
        assert_eq!(narrowed.predicate.as_deref(), Some("(name LIKE '%nccl%')"));
    }
}
