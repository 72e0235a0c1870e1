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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
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

/// Import `config.inputs` into `config.output`, calling `on_window` after each trace, in input
/// order. On any error nothing is left at `config.output` (nor its temporary folder).
///
/// The traces of an archive are imported one per core at a time: on the DLRM ranks 0-3 (2 cores)
/// import takes 17.3 [15.5-18.5] ms instead of 19.2 [17.9-20.1] serially (release, 7 interleaved
/// rounds of `import kineto` on both builds).
pub fn import_kineto(
    config: &ImportConfig,
    on_window: impl FnMut(&WindowReport) + Send,
) -> Result<Vec<WindowReport>> {
    if config.inputs.is_empty() {
        return Err(Error::Usage("no trace to import".into()));
    }
    let staging = Staging::create(&config.output)?;
    let reports = if config.inputs.len() == 1 {
        let mut on_window = on_window;
        let report = import_trace(&config.inputs[0], |_| {
            Ok(Place {
                window: config.output.clone(),
                write_to: staging.tmp.clone(),
                rename_to: None,
                rank: None,
                window_id: 1,
            })
        })?;
        on_window(&report);
        vec![report]
    } else {
        import_archive(config, &staging.tmp, on_window)?
    };
    staging.commit()?;
    Ok(reports)
}

/// Where one trace's window goes.
struct Place {
    /// Its folder once the import completes.
    window: PathBuf,
    /// The existing, empty folder it is written into.
    write_to: PathBuf,
    /// Where `write_to` is renamed once the window is whole, if anywhere.
    rename_to: Option<PathBuf>,
    rank: Option<i64>,
    window_id: i64,
}

/// Read, parse and write one trace; `place` gets the parsed trace and says where it goes.
fn import_trace(
    input: &Path,
    place: impl FnOnce(&kineto::Doc) -> Result<Place>,
) -> Result<WindowReport> {
    let started = Instant::now();
    let mut stage = Clock::start();
    let bytes = crate::file::read_gunzipped(input)?;
    stage.mark("import read");
    let doc = kineto::Doc::parse(&bytes, input)?;
    stage.mark("import parse");
    let place = place(&doc)?;
    let stats = kineto::write_window(&doc, &place.write_to, place.window_id)?;
    if let Some(dir) = &place.rename_to {
        std::fs::rename(&place.write_to, dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(WindowReport {
        input: input.to_path_buf(),
        window: place.window,
        rank: place.rank,
        json_bytes: bytes.len() as u64,
        seconds: started.elapsed().as_secs_f64(),
        stats,
    })
}

/// Several traces: DIR/rank=R/window_id=NNNNNN/, ids counted per rank in input order. Each
/// worker takes the next trace, parses it, waits for its turn to be given its rank's next id
/// (so ids follow input order whichever trace parses first), and writes it.
fn import_archive(
    config: &ImportConfig,
    staging: &Path,
    on_window: impl FnMut(&WindowReport) + Send,
) -> Result<Vec<WindowReport>> {
    let inputs = &config.inputs;
    let ids = Turns::default();
    let next_input = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done = Mutex::new(Ordered {
        reports: (0..inputs.len()).map(|_| None).collect(),
        reported: 0,
        on_window,
    });
    let cores = crate::threads::cores();
    let errors: Vec<(usize, Error)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..cores.min(inputs.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut errors = Vec::new();
                    loop {
                        let position = next_input.fetch_add(1, Ordering::SeqCst);
                        if position >= inputs.len() || failed.load(Ordering::SeqCst) {
                            // a position taken is always given its turn, so no one waits on it
                            if position < inputs.len() {
                                drop(ids.ticket(position));
                            }
                            return errors;
                        }
                        let ticket = ids.ticket(position);
                        let result = import_trace(&inputs[position], move |doc| {
                            let rank = doc.rank().unwrap_or(position as i64);
                            let window_id = ticket.next_id(rank);
                            let rel = Path::new(&format!("rank={rank}"))
                                .join(format!("window_id={window_id:06}"));
                            // window_id=N.tmp inside the staging folder, renamed once whole
                            let dir = staging.join(&rel);
                            let write_to = dir.with_extension("tmp");
                            create_dir(&write_to)?;
                            Ok(Place {
                                window: config.output.join(&rel),
                                write_to,
                                rename_to: Some(dir),
                                rank: Some(rank),
                                window_id,
                            })
                        });
                        match result {
                            Ok(report) => done
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(position, report),
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                errors.push((position, e));
                            }
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    if let Some((_, e)) = errors.into_iter().min_by_key(|(position, _)| *position) {
        return Err(e);
    }
    let done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(done.reports.into_iter().flatten().collect())
}

/// Window ids per rank, handed out in input order: position p gets its id once p - 1 has had
/// its turn (or given it up).
#[derive(Default)]
struct Turns {
    state: Mutex<TurnState>,
    changed: Condvar,
}

#[derive(Default)]
struct TurnState {
    next_position: usize,
    last_id: BTreeMap<i64, i64>,
}

impl Turns {
    fn ticket(&self, position: usize) -> Ticket<'_> {
        Ticket {
            turns: self,
            position,
            used: false,
        }
    }

    /// Wait for `position`'s turn, run `take` in it, and pass the turn on.
    fn take<T>(&self, position: usize, take: impl FnOnce(&mut TurnState) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.next_position != position {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        let taken = take(&mut state);
        state.next_position += 1;
        self.changed.notify_all();
        taken
    }
}

/// One input's turn; dropped unused (the trace failed), it still passes the turn on.
struct Ticket<'a> {
    turns: &'a Turns,
    position: usize,
    used: bool,
}

impl Ticket<'_> {
    fn next_id(mut self, rank: i64) -> i64 {
        self.used = true;
        self.turns.take(self.position, |state| {
            let id = state.last_id.entry(rank).or_insert(0);
            *id += 1;
            *id
        })
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.turns.take(self.position, |_| ());
        }
    }
}

/// Finished traces, passed to `on_window` in input order.
struct Ordered<F> {
    reports: Vec<Option<WindowReport>>,
    reported: usize,
    on_window: F,
}

impl<F: FnMut(&WindowReport)> Ordered<F> {
    fn push(&mut self, position: usize, report: WindowReport) {
        self.reports[position] = Some(report);
        while let Some(Some(report)) = self.reports.get(self.reported) {
            (self.on_window)(report);
            self.reported += 1;
        }
    }
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// `OUTPUT.tmp`, removed on drop unless renamed to `OUTPUT` by [`Staging::commit`].
struct Staging {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
    listed: Option<crate::file::Unfinished>,
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
        let ((), listed) = crate::file::Unfinished::make(|| create_dir(&tmp), |_| tmp.clone())?;
        Ok(Staging {
            listed: Some(listed),
            tmp,
            dest,
            committed: false,
        })
    }

    fn commit(mut self) -> Result<()> {
        let listed = self.listed.take().expect("committed once");
        (listed.finish(|| std::fs::rename(&self.tmp, &self.dest)))
            .map_err(|e| Error::io(&self.dest, e))?;
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
