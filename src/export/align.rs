//! Stage `export`, merged: how far each window's clock is from the first window's (`--align`).
//!
//! - `wall`: 0 everywhere (the clocks as recorded).
//! - `collectives`: the NCCL kernels (name containing `nccl`, any case) of each window, per
//!   communicator in start order: the k-th collective of a communicator is taken as one
//!   moment on every rank. A communicator is the kernel's process group where its metadata
//!   records one (`Process Group Name`, `pg_name` or `process_group`), else its name. A
//!   window's offset is the median, over the collectives it shares with the first window,
//!   of (first window's end - its end): robust to a few collectives that do not line up.
//! - a FILE: one offset per partition, in ns (added to that window's times), either lines
//!   `PARTITION OFFSET` (`rank=1 -1500`, `#` starts a comment; OFFSET an integer with an
//!   optional unit `ns`, `us`, `ms` or `s`) or a JSON object `{"rank=1": -1500}` (ns).
//!   PARTITION is a window's partition path (`rank=1/window_id=000001`) or its leading
//!   folders (`rank=1`); a window the file does not name is an error.

use std::collections::HashMap;
use std::path::Path;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};

use super::merge::Align;
use crate::error::Error;
use crate::window::{Window, WindowDir};
use crate::Result;

/// One window's offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offset {
    /// added to its times, ns
    pub offset_ns: i64,
    /// the collectives it was taken from (`collectives` only)
    pub matched: Option<usize>,
}

/// Each window's offset from the first's, as `align` says; `partitions` are the windows'
/// partition paths.
pub(crate) async fn offsets(
    align: &Align,
    windows: &[&WindowDir],
    partitions: &[String],
) -> Result<Vec<Offset>> {
    match align {
        Align::Wall => Ok(vec![
            Offset {
                offset_ns: 0,
                matched: None
            };
            windows.len()
        ]),
        Align::File(path) => from_file(path, partitions),
        Align::Collectives => {
            let mut ends = Vec::with_capacity(windows.len());
            for window in windows {
                ends.push(collective_ends(&window.path).await?);
            }
            Ok(ends
                .iter()
                .map(|e| {
                    let (offset_ns, matched) = median_offset(&ends[0], e);
                    Offset {
                        offset_ns,
                        matched: Some(matched),
                    }
                })
                .collect())
        }
    }
}

/// Each communicator's collectives' ends (ns), in start order.
type Ends = HashMap<String, Vec<i64>>;

/// The median of (reference end - end) over the collectives both have (0 when none), and
/// how many there are.
fn median_offset(reference: &Ends, ends: &Ends) -> (i64, usize) {
    let mut diffs: Vec<i64> = Vec::new();
    for (communicator, own) in ends {
        if let Some(theirs) = reference.get(communicator) {
            diffs.extend(theirs.iter().zip(own).map(|(r, e)| r - e));
        }
    }
    if diffs.is_empty() {
        return (0, 0);
    }
    diffs.sort_unstable();
    let n = diffs.len();
    let median = match n % 2 {
        1 => diffs[n / 2],
        _ => ((diffs[n / 2 - 1] as i128 + diffs[n / 2] as i128) / 2) as i64,
    };
    (median, n)
}

/// The NCCL kernels' ends of the window at `dir`, per communicator, in start order.
async fn collective_ends(dir: &Path) -> Result<Ends> {
    let window = Window::open(dir)?;
    let ctx = crate::catalog::open(&window).await?;
    let sql = "SELECT name, end_ns, metadata FROM kernel WHERE lower(name) LIKE '%nccl%' \
               ORDER BY start_ns, end_ns";
    let batches = match ctx.sql(sql).await {
        Ok(frame) => frame.collect().await?,
        // a window whose kernels have no metadata column
        Err(_) => {
            let sql = sql.replace(", metadata", ", CAST(NULL AS VARCHAR) AS metadata");
            ctx.sql(&sql).await?.collect().await?
        }
    };
    let mut ends = Ends::new();
    for batch in batches {
        let names = cast(batch.column(0), &DataType::Utf8)?;
        let names = names.as_string::<i32>();
        let end = cast(batch.column(1), &DataType::Int64)?;
        let end = end.as_primitive::<Int64Type>();
        let metadata = cast(batch.column(2), &DataType::Utf8)?;
        let metadata = metadata.as_string::<i32>();
        for row in 0..batch.num_rows() {
            let group = (metadata.is_valid(row))
                .then(|| process_group(metadata.value(row)))
                .flatten();
            let communicator = group.unwrap_or_else(|| names.value(row).to_string());
            ends.entry(communicator).or_default().push(end.value(row));
        }
    }
    Ok(ends)
}

/// The process group a kernel's metadata records, if any.
fn process_group(metadata: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(metadata).ok()?;
    ["Process Group Name", "pg_name", "process_group"]
        .iter()
        .find_map(|key| match value.get(key)? {
            serde_json::Value::String(s) => Some(format!("group {s}")),
            serde_json::Value::Null => None,
            other => Some(format!("group {other}")),
        })
}

/// The offsets a file gives (see the module docs), in the windows' order.
fn from_file(path: &Path, partitions: &[String]) -> Result<Vec<Offset>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let bad =
        |line: usize, what: String| Error::Usage(format!("{}:{line}: {what}", path.display()));
    let mut given: Vec<(String, i64)> = Vec::new();
    if text.trim_start().starts_with('{') {
        let value: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| bad(e.line(), e.to_string()))?;
        for (partition, offset) in value {
            let ns = offset
                .as_i64()
                .ok_or_else(|| bad(1, format!("{partition}: {offset} is not an integer (ns)")))?;
            given.push((partition, ns));
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let mut fields = line.split_whitespace();
            let (Some(partition), Some(offset), None) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad(i + 1, format!("`{line}`: expected PARTITION OFFSET")));
            };
            let ns = parse_duration_ns(offset).ok_or_else(|| {
                bad(
                    i + 1,
                    format!(
                        "`{offset}`: expected an integer with an optional unit ns, us, ms or s"
                    ),
                )
            })?;
            given.push((partition.trim_matches('/').to_string(), ns));
        }
    }
    (partitions.iter())
        .map(|partition| {
            let names = |p: &str| {
                partition == p
                    || partition
                        .strip_prefix(p)
                        .is_some_and(|rest| rest.starts_with('/'))
            };
            // the longest (most precise) partition the file names
            (given.iter())
                .filter(|(p, _)| names(p))
                .max_by_key(|(p, _)| p.len())
                .map(|(_, ns)| Offset {
                    offset_ns: *ns,
                    matched: None,
                })
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "{}: no offset for the window {partition}",
                        path.display()
                    ))
                })
        })
        .collect()
}

/// `-1500`, `2us`, `1.5ms`, `1s` in ns.
fn parse_duration_ns(text: &str) -> Option<i64> {
    let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((text, 1.0));
    if let Ok(n) = number.parse::<i64>() {
        return n.checked_mul(scale as i64);
    }
    let n: f64 = number.parse().ok()?;
    n.is_finite().then(|| (n * scale).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_offset_ignores_a_collective_that_does_not_line_up() {
        let reference: Ends = [("a".to_string(), vec![100, 200, 300, 400])].into();
        let ends: Ends = [
            ("a".to_string(), vec![90, 190, 290, 10_000]),
            ("b".to_string(), vec![5]),
        ]
        .into();
        assert_eq!(median_offset(&reference, &ends), (10, 4));
        assert_eq!(median_offset(&reference, &Ends::new()), (0, 0));
    }

    #[test]
    fn a_file_gives_offsets_per_partition() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offsets.txt");
        std::fs::write(&path, "# rank offsets\nrank=0 0\nrank=1 -2us\n").unwrap();
        let partitions = [
            "rank=0/window_id=000001".to_string(),
            "rank=1/window_id=000001".into(),
        ];
        let got = from_file(&path, &partitions).unwrap();
        assert_eq!(
            got.iter().map(|o| o.offset_ns).collect::<Vec<_>>(),
            [0, -2000]
        );
        std::fs::write(&path, r#"{"rank=1/window_id=000001": 7}"#).unwrap();
        let err = from_file(&path, &partitions).unwrap_err().to_string();
        assert!(err.contains("rank=0/window_id=000001"), "{err}");
        assert_eq!(parse_duration_ns("1.5ms"), Some(1_500_000));
    }
}
