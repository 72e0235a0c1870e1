//! Stage `window`: find the files of a window (or of every window of an archive), check each
//! Parquet file against its canonical schema, and work out the table schema the catalog
//! registers (canonical columns in table types, plus any extra columns a producer added).
//!
//! In: a path. Out: [`Window`], a checked description; no data is read beyond file footers.

mod check;
mod discover;
pub mod row_order;
pub mod writer;

use std::path::{Path, PathBuf};

use datafusion::arrow::datatypes::SchemaRef;

use crate::schema::TableSpec;
use crate::Result;

pub use check::{check_file, table_schema_for, CheckedFile};
pub use discover::{find_windows, Found, WindowDir, WINDOW_KEY};

/// A checked window or archive, ready to be registered in a catalog.
#[derive(Debug)]
pub struct Window {
    /// The path the user gave.
    pub root: PathBuf,
    /// Partition keys of an archive, outermost first (`window_id` last); empty for one window.
    pub partition_keys: Vec<String>,
    /// The window directories, in path order.
    pub windows: Vec<WindowDir>,
    /// One entry per table of the format that at least one window stores with rows.
    pub tables: Vec<TableSource>,
    /// One line per ignored file, for stderr.
    pub warnings: Vec<String>,
}

/// The files of one table across the windows, and the schema they are read with.
#[derive(Debug)]
pub struct TableSource {
    pub spec: &'static TableSpec,
    /// Canonical columns in table types, then extra columns found in the files.
    pub schema: SchemaRef,
    pub files: Vec<CheckedFile>,
}

impl Window {
    /// Discover and check the window or archive at `path`.
    pub fn open(path: &Path) -> Result<Window> {
        let found = find_windows(path)?;
        let mut warnings = found.warnings;
        let mut per_table: Vec<(&'static TableSpec, Vec<CheckedFile>)> = Vec::new();
        for dir in &found.windows {
            for (spec, file) in &dir.table_files {
                let checked = check_file(spec, file)?;
                if checked.rows == 0 {
                    continue; // a zero-row file means the same as no file
                }
                match per_table.iter_mut().find(|(s, _)| s.name == spec.name) {
                    Some((_, files)) => files.push(checked),
                    None => per_table.push((spec, vec![checked])),
                }
            }
            warnings.extend(dir.warnings.iter().cloned());
        }
        let mut tables = Vec::new();
        for spec in crate::schema::TABLES {
            if let Some((_, files)) = per_table.iter().find(|(s, _)| s.name == spec.name) {
                let schema = table_schema_for(spec, files)?;
                tables.push(TableSource {
                    spec,
                    schema,
                    files: files.clone(),
                });
            }
        }
        Ok(Window {
            root: path.to_path_buf(),
            partition_keys: found.partition_keys,
            windows: found.windows,
            tables,
            warnings,
        })
    }

    /// A window with no tables at all (every table registers empty): for planning checks.
    pub fn empty(root: &Path, partition_keys: Vec<String>) -> Window {
        Window {
            root: root.to_path_buf(),
            partition_keys,
            windows: Vec::new(),
            tables: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Whether this is an archive of windows rather than one window directory.
    pub fn is_archive(&self) -> bool {
        !self.partition_keys.is_empty()
    }

    /// The stored table named `name`, if any window has rows for it.
    pub fn table(&self, name: &str) -> Option<&TableSource> {
        self.tables.iter().find(|t| t.spec.name == name)
    }
}
