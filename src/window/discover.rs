//! Finding windows: one window directory, or an archive of `key=value/.../window_id=N/`
//! folders (spec §8). Lists directories only; file contents are checked in `check`.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::schema::{table_spec, TableSpec, CPU_TRACE_FILE};
use crate::Result;

/// The partition key of the innermost archive folder.
pub const WINDOW_KEY: &str = "window_id";

/// One window directory and what it holds.
#[derive(Debug, Clone)]
pub struct WindowDir {
    pub path: PathBuf,
    /// `(key, value)` per partition folder above and including `window_id=N`.
    pub partitions: Vec<(String, String)>,
    pub table_files: Vec<(&'static TableSpec, PathBuf)>,
    /// The Kineto CPU trace (`cpu_trace.json.gz`, or an uncompressed `cpu_trace.json`).
    pub cpu_trace: Option<PathBuf>,
    pub warnings: Vec<String>,
}

/// What [`find_windows`] found.
#[derive(Debug)]
pub struct Found {
    pub partition_keys: Vec<String>,
    pub windows: Vec<WindowDir>,
    pub warnings: Vec<String>,
}

/// Find the window at `path` or every window of the archive at `path`.
pub fn find_windows(path: &Path) -> Result<Found> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_dir() {
        return Err(Error::NotAWindow {
            dir: path.to_path_buf(),
        });
    }
    let entries = sorted_entries(path)?;
    let looks_like_window = entries.iter().any(|p| {
        p.is_file()
            && file_name(p).is_some_and(|n| n.ends_with(".parquet") || n.starts_with("cpu_trace."))
    });
    if looks_like_window {
        return Ok(Found {
            partition_keys: Vec::new(),
            windows: vec![read_window_dir(path, Vec::new())?],
            warnings: Vec::new(),
        });
    }
    let mut windows = Vec::new();
    let mut warnings = Vec::new();
    walk_archive(path, &mut Vec::new(), &mut windows, &mut warnings)?;
    let Some(first) = windows.first() else {
        return Err(Error::NotAWindow {
            dir: path.to_path_buf(),
        });
    };
    let keys: Vec<String> = first.partitions.iter().map(|(k, _)| k.clone()).collect();
    for w in &windows {
        let these: Vec<&String> = w.partitions.iter().map(|(k, _)| k).collect();
        if these.len() != keys.len() || these.iter().zip(&keys).any(|(a, b)| *a != b) {
            return Err(Error::Usage(format!(
                "{}: partition folders differ from {} (every window needs the same key=value levels)",
                w.path.display(),
                first.path.display()
            )));
        }
    }
    Ok(Found {
        partition_keys: keys,
        windows,
        warnings,
    })
}

fn walk_archive(
    dir: &Path,
    partitions: &mut Vec<(String, String)>,
    windows: &mut Vec<WindowDir>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    for entry in sorted_entries(dir)? {
        let Some(name) = file_name(&entry) else {
            continue;
        };
        if !entry.is_dir() {
            continue;
        }
        // `.tmp` folders are windows being written; `_schema` and friends are not partitions.
        if name.starts_with('_') || name.starts_with('.') || name.ends_with(".tmp") {
            continue;
        }
        let Some((key, value)) = name.split_once('=') else {
            warnings.push(format!(
                "warning: {}: not a key=value partition folder, ignored",
                entry.display()
            ));
            continue;
        };
        partitions.push((key.to_string(), value.to_string()));
        if key == WINDOW_KEY {
            windows.push(read_window_dir(&entry, partitions.clone())?);
        } else {
            walk_archive(&entry, partitions, windows, warnings)?;
        }
        partitions.pop();
    }
    Ok(())
}

fn read_window_dir(dir: &Path, partitions: Vec<(String, String)>) -> Result<WindowDir> {
    let mut table_files = Vec::new();
    let mut cpu_trace = None;
    let mut warnings = Vec::new();
    for entry in sorted_entries(dir)? {
        let Some(name) = file_name(&entry) else {
            continue;
        };
        let spec = name.strip_suffix(".parquet").and_then(table_spec);
        if let Some(spec) = spec.filter(|_| entry.is_file()) {
            table_files.push((spec, entry));
        } else if name == CPU_TRACE_FILE || name == "cpu_trace.json" {
            // Prefer the compressed file when both exist; it is what writers produce.
            if cpu_trace.is_none() || name == CPU_TRACE_FILE {
                cpu_trace = Some(entry);
            }
        } else {
            warnings.push(format!(
                "warning: {}: not part of the window format, ignored",
                entry.display()
            ));
        }
    }
    Ok(WindowDir {
        path: dir.to_path_buf(),
        partitions,
        table_files,
        cpu_trace,
        warnings,
    })
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let read = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut out = Vec::new();
    for entry in read {
        out.push(entry.map_err(|e| Error::io(dir, e))?.path());
    }
    out.sort();
    Ok(out)
}

fn file_name(p: &Path) -> Option<&str> {
    p.file_name().and_then(|n| n.to_str())
}
