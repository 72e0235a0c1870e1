//! Stage `load`: an nsys report (a `.sqlite` export or a `parquetdir` folder) -> the Arrow
//! batches of each source table of [`super::source::SOURCES`], in the shape that table
//! declares; an SQLite report's large tables ([`super::source::STREAMED`]) are only checked
//! here and read later, in batches, as their mappings run ([`SqliteTable::read`]).
//! Columns are found by name; a table or column the report lacks is an error when required
//! and nulls (or an empty table) when optional; text that is not UTF-8 is read lossily.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use rusqlite::types::ValueRef;

use super::cells::Builder;
use super::source::{Col, Source, Ty, SOURCES};
use crate::error::Error;
use crate::Result;

/// The tables of one report, each in its declared shape: the loaded ones as batches, in row
/// order (a large SQLite table is read in rowid ranges, in parallel; a parquetdir table may
/// have parts), the streamed ones as what their reader needs.
pub struct Report {
    pub path: PathBuf,
    pub tables: BTreeMap<&'static str, Vec<RecordBatch>>,
    /// An SQLite report's large tables, read as their mappings run.
    pub streamed: BTreeMap<&'static str, Arc<SqliteTable>>,
    /// Optional tables the report does not have (registered empty).
    pub absent: Vec<&'static str>,
}

/// What a reader found of one table.
pub(super) enum Part {
    Loaded(Vec<RecordBatch>),
    Streamed(SqliteTable),
}

/// The declared Arrow schema of a source table.
pub fn schema_of(source: &Source) -> SchemaRef {
    let fields: Vec<Field> = source
        .columns
        .iter()
        .map(|c| {
            let ty = match c.ty {
                Ty::Int => DataType::Int64,
                Ty::Text => DataType::Utf8,
            };
            Field::new(c.name, ty, true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// Load a report: a directory is a parquetdir export, anything else an SQLite file.
pub fn load(path: &Path) -> Result<Report> {
    if path.is_dir() {
        super::parquetdir::load_parquetdir(path)
    } else {
        load_sqlite(path)
    }
}

pub(super) fn bad(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::BadReport {
        file: path.to_path_buf(),
        reason: reason
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    }
}

fn missing_table(path: &Path, source: &Source) -> Error {
    Error::MissingReportTable {
        file: path.to_path_buf(),
        table: source.name.to_string(),
    }
}

fn missing_column(path: &Path, source: &Source, col: &Col) -> Error {
    Error::MissingReportColumn {
        file: path.to_path_buf(),
        table: source.name.to_string(),
        column: col.name.to_string(),
    }
}

/// Assemble the report from whichever tables `read` finds (in [`SOURCES`] order, so the
/// first problem in that order is the one reported).
pub(super) fn assemble(
    path: &Path,
    mut read: impl FnMut(&Source) -> Result<Option<Part>>,
) -> Result<Report> {
    let mut tables = BTreeMap::new();
    let mut streamed = BTreeMap::new();
    let mut absent = Vec::new();
    for source in SOURCES {
        match read(source)? {
            Some(Part::Loaded(batches)) => {
                tables.insert(source.name, batches);
            }
            Some(Part::Streamed(table)) => {
                streamed.insert(source.name, Arc::new(table));
            }
            None if source.required => return Err(missing_table(path, source)),
            None => {
                absent.push(source.name);
                tables.insert(source.name, vec![RecordBatch::new_empty(schema_of(source))]);
            }
        }
    }
    Ok(Report {
        path: path.to_path_buf(),
        tables,
        streamed,
        absent,
    })
}

// ---- SQLite ----------------------------------------------------------------------------

/// Rows of a table below which it is read whole, by one thread.
const CHUNK_ROWS: i64 = 1 << 17;

fn open_sqlite(path: &Path) -> Result<rusqlite::Connection> {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    rusqlite::Connection::open_with_flags(path, flags).map_err(|e| bad(path, e))
}

/// One read of a table: all of it, or the rows of an inclusive rowid range.
struct Job<'a> {
    source: &'a Source,
    actual: String,
    rowids: Option<(i64, i64)>,
}

/// Read every table the report has but the streamed ones, the large ones in rowid ranges,
/// on one thread (and one connection) per core; check the streamed ones' columns.
fn load_sqlite(path: &Path) -> Result<Report> {
    // Existence first: SQLite would report a missing file as "unable to open".
    std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let conn = open_sqlite(path)?;
    let names =
        sqlite_tables(&conn).map_err(|e| bad(path, format!("not an SQLite report ({e})")))?;
    let threads = crate::threads::cores();
    let mut jobs = Vec::new();
    let mut checked = BTreeMap::new();
    for source in SOURCES {
        let Some(actual) = names.iter().find(|n| n.eq_ignore_ascii_case(source.name)) else {
            continue;
        };
        if super::source::STREAMED.contains(&source.name) {
            checked.insert(source.name, SqliteTable::check(&conn, path, source, actual));
            continue;
        }
        for rowids in rowid_ranges(&conn, actual, threads) {
            jobs.push(Job {
                source,
                actual: actual.clone(),
                rowids,
            });
        }
    }
    let results = run_jobs(path, &conn, &jobs, threads);
    let mut results = jobs.iter().zip(results).peekable();
    assemble(path, |source| {
        if let Some(table) = checked.remove(source.name) {
            return Ok(Some(Part::Streamed(table?)));
        }
        let mut batches = Vec::new();
        while let Some((_, result)) = results.next_if(|(j, _)| j.source.name == source.name) {
            batches.push(result?);
        }
        let found = names.iter().any(|n| n.eq_ignore_ascii_case(source.name));
        Ok(found.then_some(Part::Loaded(batches)))
    })
}

/// The rowid ranges to read `table` in: one per thread when it is large, else one (None:
/// the whole table, also for a view or a table without rowids).
fn rowid_ranges(
    conn: &rusqlite::Connection,
    table: &str,
    threads: usize,
) -> Vec<Option<(i64, i64)>> {
    let bounds = conn.query_row(&rowid_bounds(table), [], |r| {
        Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?))
    });
    let Ok((Some(lo), Some(hi))) = bounds else {
        return vec![None];
    };
    let span = i128::from(hi) - i128::from(lo) + 1;
    if threads < 2 || span < 2 * i128::from(CHUNK_ROWS) {
        return vec![None];
    }
    let step = span / threads as i128 + 1;
    (0..threads as i128)
        .map(|i| i128::from(lo) + i * step)
        .take_while(|start| *start <= i128::from(hi))
        .map(|start| {
            let end = (start + step - 1).min(i128::from(hi));
            // both within [lo, hi]: they fit an i64
            Some((start as i64, end as i64))
        })
        .collect()
}

/// Run `jobs` on `threads` threads, each with its own connection (on `conn` alone when there
/// is one thread or one job); results in job order.
fn run_jobs(
    path: &Path,
    conn: &rusqlite::Connection,
    jobs: &[Job<'_>],
    threads: usize,
) -> Vec<Result<RecordBatch>> {
    let read = |conn: &rusqlite::Connection, job: &Job<'_>| {
        read_sqlite_table(conn, path, job.source, &job.actual, job.rowids)
    };
    if threads < 2 || jobs.len() < 2 {
        return jobs.iter().map(|job| read(conn, job)).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<RecordBatch>>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.min(jobs.len()) {
            s.spawn(|| {
                let own = open_sqlite(path);
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(job) = jobs.get(i) else {
                        break;
                    };
                    let result = match &own {
                        Ok(conn) => read(conn, job),
                        Err(e) => Err(bad(path, e)),
                    };
                    *slots[i].lock().expect("a reader thread panicked") = Some(result);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("a reader thread panicked")
                .expect("every job was run")
        })
        .collect()
}

fn sqlite_tables(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
    rows.collect()
}

/// The query of a table's first and last rowid. Each in its own subquery: SQLite answers a
/// lone min() or max() of the rowid from the b-tree's ends, but scans the whole table for
/// both in one SELECT.
fn rowid_bounds(table: &str) -> String {
    let t = quote(table);
    format!("SELECT (SELECT min(rowid) FROM {t}), (SELECT max(rowid) FROM {t})")
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// For each declared column of `source`: its name in the report's table `actual`, or None
/// (optional and absent); a required one absent is an error.
fn resolve_columns(
    conn: &rusqlite::Connection,
    path: &Path,
    source: &Source,
    actual: &str,
) -> Result<Vec<Option<String>>> {
    let sql_err = |e: rusqlite::Error| bad(path, format!("{}: {e}", source.name));
    let mut columns: Vec<String> = Vec::new();
    {
        let mut stmt = conn
            .prepare(&format!("PRAGMA table_info({})", quote(actual)))
            .map_err(sql_err)?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(1))
            .map_err(sql_err)?;
        for name in rows {
            columns.push(name.map_err(sql_err)?);
        }
    }
    let mut found = Vec::new();
    for col in source.columns {
        match columns.iter().find(|c| c.eq_ignore_ascii_case(col.name)) {
            Some(c) => found.push(Some(c.clone())),
            None if col.required => return Err(missing_column(path, source, col)),
            None => found.push(None),
        }
    }
    Ok(found)
}

fn read_sqlite_table(
    conn: &rusqlite::Connection,
    path: &Path,
    source: &Source,
    actual: &str,
    rowids: Option<(i64, i64)>,
) -> Result<RecordBatch> {
    let sql_err = |e: rusqlite::Error| bad(path, format!("{}: {e}", source.name));
    // For each declared column: its position in the SELECT, or None (optional and absent).
    let mut select = Vec::new();
    let mut found = Vec::new();
    for name in resolve_columns(conn, path, source, actual)? {
        match name {
            Some(c) => {
                found.push(Some(select.len()));
                select.push(quote(&c));
            }
            None => found.push(None),
        }
    }
    let mut builders: Vec<Builder> = source.columns.iter().map(|c| Builder::new(c.ty)).collect();
    let list = if select.is_empty() {
        "1".to_string()
    } else {
        select.join(", ")
    };
    let range = rowids.map_or(String::new(), |(lo, hi)| {
        format!(" WHERE rowid >= {lo} AND rowid <= {hi}")
    });
    let mut stmt = conn
        .prepare(&format!("SELECT {list} FROM {}{range}", quote(actual)))
        .map_err(sql_err)?;
    let mut rows = stmt.query([]).map_err(sql_err)?;
    while let Some(row) = rows.next().map_err(sql_err)? {
        for (b, at) in builders.iter_mut().zip(&found) {
            match at {
                Some(i) => b.push(row.get_ref(*i).map_err(sql_err)?),
                None => b.push(ValueRef::Null),
            }
        }
    }
    let arrays: Vec<ArrayRef> = builders.into_iter().map(Builder::finish).collect();
    RecordBatch::try_new(schema_of(source), arrays).map_err(|e| Error::Internal(e.to_string()))
}

/// A large table of an SQLite report, checked (it has its required columns) but not read:
/// [`SqliteTable::read`] streams it, in rowid order, in batches.
#[derive(Debug)]
pub struct SqliteTable {
    path: PathBuf,
    source: &'static Source,
    actual: String,
    /// Per declared column, its name in the report (None: optional and absent).
    columns: Vec<Option<String>>,
    /// Rows estimated from the rowid span (what the join planner weighs).
    rows: usize,
    /// Whether the table has rowids (a view has none): then it is read in rowid order.
    by_rowid: bool,
}

impl SqliteTable {
    fn check(
        conn: &rusqlite::Connection,
        path: &Path,
        source: &'static Source,
        actual: &str,
    ) -> Result<SqliteTable> {
        let columns = resolve_columns(conn, path, source, actual)?;
        let bounds = conn.query_row(&rowid_bounds(actual), [], |r| {
            Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, Option<i64>>(1)?))
        });
        let (rows, by_rowid) = match bounds {
            Ok((Some(lo), Some(hi))) => {
                let span = (i128::from(hi) - i128::from(lo) + 1).max(0);
                (usize::try_from(span).unwrap_or(usize::MAX), true)
            }
            Ok(_) => (0, true),
            // no rowids: weigh it as large, so it is never the side a join collects
            Err(_) => (1 << 30, false),
        };
        Ok(SqliteTable {
            path: path.to_path_buf(),
            source,
            actual: actual.to_string(),
            columns,
            rows,
            by_rowid,
        })
    }

    pub fn source(&self) -> &'static Source {
        self.source
    }

    /// The estimated row count.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Read the declared columns `wanted` (ascending indices into the source's columns) in
    /// batches of `batch_rows`, on a connection of its own, handing each to `send` (in the
    /// shape `schema_of(source).project(wanted)`); stop early when `send` returns false.
    pub fn read(
        &self,
        wanted: &[usize],
        batch_rows: usize,
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<()> {
        let (path, source) = (self.path.as_path(), self.source);
        let sql_err = |e: rusqlite::Error| bad(path, format!("{}: {e}", source.name));
        let conn = open_sqlite(path)?;
        let schema = Arc::new(
            schema_of(source)
                .project(wanted)
                .map_err(|e| Error::Internal(e.to_string()))?,
        );
        let mut select = Vec::new();
        let mut at = Vec::new();
        for &i in wanted {
            match &self.columns[i] {
                Some(c) => {
                    at.push(Some(select.len()));
                    select.push(quote(c));
                }
                None => at.push(None),
            }
        }
        let list = if select.is_empty() {
            "1".to_string()
        } else {
            select.join(", ")
        };
        let order = if self.by_rowid { " ORDER BY rowid" } else { "" };
        let mut stmt = conn
            .prepare(&format!(
                "SELECT {list} FROM {}{order}",
                quote(&self.actual)
            ))
            .map_err(sql_err)?;
        let mut rows = stmt.query([]).map_err(sql_err)?;
        let new_builders = || -> Vec<Builder> {
            wanted
                .iter()
                .map(|&i| Builder::with_capacity(source.columns[i].ty, batch_rows))
                .collect()
        };
        let mut builders = new_builders();
        let mut n = 0;
        let flush = |builders: Vec<Builder>, n: usize| -> Result<RecordBatch> {
            let arrays: Vec<ArrayRef> = builders.into_iter().map(Builder::finish).collect();
            let options = RecordBatchOptions::new().with_row_count(Some(n));
            RecordBatch::try_new_with_options(schema.clone(), arrays, &options)
                .map_err(|e| Error::Internal(e.to_string()))
        };
        while let Some(row) = rows.next().map_err(sql_err)? {
            for (b, at) in builders.iter_mut().zip(&at) {
                match at {
                    Some(i) => b.push(row.get_ref(*i).map_err(sql_err)?),
                    None => b.push(ValueRef::Null),
                }
            }
            n += 1;
            if n == batch_rows {
                let batch = flush(std::mem::replace(&mut builders, new_builders()), n)?;
                n = 0;
                if !send(batch) {
                    return Ok(());
                }
            }
        }
        if n > 0 {
            send(flush(builders, n)?);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    #[test]
    fn a_large_table_read_in_rowid_ranges_has_every_row_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.sqlite");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300000)
             INSERT INTO StringIds SELECT i * 3, 's' || i FROM c;
             DELETE FROM StringIds WHERE id % 7 = 0;",
        )
        .unwrap();
        let source = SOURCES.iter().find(|s| s.name == "StringIds").unwrap();
        let ranges = rowid_ranges(&conn, "StringIds", 3);
        assert_eq!(ranges.len(), 3, "{ranges:?}");
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].unwrap().1 + 1, pair[1].unwrap().0, "{ranges:?}");
        }
        let ids = |batches: &[RecordBatch]| -> Vec<i64> {
            batches
                .iter()
                .flat_map(|b| {
                    let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                    a.values().to_vec()
                })
                .collect()
        };
        let whole = read_sqlite_table(&conn, &path, source, "StringIds", None).unwrap();
        let jobs: Vec<Job<'_>> = ranges
            .iter()
            .map(|r| Job {
                source,
                actual: "StringIds".into(),
                rowids: *r,
            })
            .collect();
        let parts: Vec<RecordBatch> = run_jobs(&path, &conn, &jobs, 3)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(ids(&parts), ids(std::slice::from_ref(&whole)));
        assert_eq!(whole.num_rows(), 300000 - 300000 / 7);
        // a small table, or one thread: read whole
        assert_eq!(rowid_ranges(&conn, "StringIds", 1), [None]);
        conn.execute_batch("DELETE FROM StringIds WHERE id > 3000")
            .unwrap();
        assert_eq!(rowid_ranges(&conn, "StringIds", 3), [None]);
    }
}
