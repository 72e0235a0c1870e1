//! Importers, upstream of every other stage: turn other profilers' traces into windows of the
//! format (docs/window-format.md), which the rest of tracesql then reads like any other.
//!
//! ```text
//! TRACE.json[.gz]...  -> kineto : one window per trace (Parquet tables + cpu_trace.json.gz)
//!                     -> layout : one trace  -> DIR/
//!                                 several    -> DIR/rank=R/window_id=NNNNNN/
//!                     -> file   : written under DIR.tmp, renamed to DIR when every trace is in
//! REPORT.sqlite|DIR... -> nsys : one window per (report, process that did GPU work)
//!                     -> layout : one window -> DIR/
//!                                 several    -> DIR/report=NAME/process=PID/window_id=NNNNNN/
//! ```

pub mod kineto;
pub mod nsys;

use crate::profile::Clock;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::Error;
use crate::Result;

pub use kineto::ImportStats;

/// What to import and where.
#[derive(Clone, Debug)]
pub struct ImportConfig {
    /// Kineto traces, `.json` or gzipped.
    pub inputs: Vec<PathBuf>,
    /// The window (one input) or archive (several) to create; must not exist.
    pub output: PathBuf,
}

/// One imported trace.
#[derive(Clone, Debug)]
pub struct WindowReport {
    pub input: PathBuf,
    /// The window's folder, where it is once the import completes.
    pub window: PathBuf,
    /// The archive's `rank=` value (None for a single window).
    pub rank: Option<i64>,
    /// Uncompressed JSON size.
    pub json_bytes: u64,
    pub seconds: f64,
    pub stats: ImportStats,
}

/// Import `config.inputs` into `config.output`, calling `on_window` after each trace. On any
/// error nothing is left at `config.output` (nor its temporary folder).
pub fn import_kineto(
    config: &ImportConfig,
    mut on_window: impl FnMut(&WindowReport),
) -> Result<Vec<WindowReport>> {
    if config.inputs.is_empty() {
        return Err(Error::Usage("no trace to import".into()));
    }
    let staging = Staging::create(&config.output)?;
    let archive = config.inputs.len() > 1;
    let mut next_id: BTreeMap<i64, i64> = BTreeMap::new();
    let mut reports = Vec::new();
    for (position, input) in config.inputs.iter().enumerate() {
        let started = Instant::now();
        let mut stage = Clock::start();
        let bytes = crate::file::read_gunzipped(input)?;
        stage.mark("import read");
        let doc = kineto::Doc::parse(&bytes, input)?;
        stage.mark("import parse");
        let (dir, final_dir, rank, window_id) = if archive {
            let rank = doc.rank().unwrap_or(position as i64);
            let id = next_id.entry(rank).or_insert(0);
            *id += 1;
            let rel = Path::new(&format!("rank={rank}")).join(format!("window_id={:06}", *id));
            (
                staging.tmp.join(&rel),
                config.output.join(&rel),
                Some(rank),
                *id,
            )
        } else {
            (staging.tmp.clone(), config.output.clone(), None, 1)
        };
        let stats = if archive {
            // window_id=N.tmp inside the staging folder, renamed once whole
            let tmp = dir.with_extension("tmp");
            create_dir(&tmp)?;
            let stats = kineto::write_window(&doc, &tmp, window_id)?;
            std::fs::rename(&tmp, &dir).map_err(|e| Error::io(&dir, e))?;
            stats
        } else {
            kineto::write_window(&doc, &dir, window_id)?
        };
        let report = WindowReport {
            input: input.clone(),
            window: final_dir,
            rank,
            json_bytes: bytes.len() as u64,
            seconds: started.elapsed().as_secs_f64(),
            stats,
        };
        on_window(&report);
        reports.push(report);
    }
    staging.commit()?;
    Ok(reports)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// `OUTPUT.tmp`, removed on drop unless renamed to `OUTPUT` by [`Staging::commit`].
struct Staging {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl Staging {
    fn create(dest: &Path) -> Result<Self> {
        // `out/` and `out` name the same folder; the temporary one is `out.tmp` for both.
        let dest: PathBuf = dest.components().collect();
        if dest.exists() {
            return Err(Error::Usage(format!(
                "{}: already exists; windows are immutable, choose a new --output",
                dest.display()
            )));
        }
        let mut tmp = dest.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        if tmp.exists() {
            return Err(Error::Usage(format!(
                "{}: exists (left by an interrupted import?); remove it and run again",
                tmp.display()
            )));
        }
        create_dir(&tmp)?;
        Ok(Staging {
            tmp,
            dest,
            committed: false,
        })
    }

    fn commit(mut self) -> Result<()> {
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: the error being reported matters more than a failed cleanup.
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}
