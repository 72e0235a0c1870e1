//! Shell statements: SQL text in, each statement's result out through a sink to the screen
//! (fitted to it) or the `.output` file (whole). DataFusion runs on a task of its own and the
//! batches come back over a channel, so on a terminal Ctrl-C cancels at once and a slow
//! statement shows its running time.

use std::cell::Cell;
use std::future::Future;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::parser::{DFParser, Statement};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::dot::Width;
use super::Shell;
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::table::terminal_width;
use crate::sink::{Fit, OutputFormat, ResultWriter};
use crate::Result;

/// How long a statement runs before its time is shown.
const SHOW_TIME_AFTER: Duration = Duration::from_secs(1);

/// What the query task sends back.
enum Msg {
    Schema(SchemaRef),
    Batch(RecordBatch),
}

impl Shell {
    /// Run every statement of `sql` in order, writing each one's result.
    pub(super) async fn sql(&mut self, sql: &str) -> Result<()> {
        for statement in DFParser::parse_sql(sql)? {
            self.statement(statement).await?;
        }
        Ok(())
    }

    async fn statement(&mut self, statement: Statement) -> Result<()> {
        let started = Instant::now();
        let (tx, mut rx) = mpsc::channel(2);
        let query = AbortOnDrop(Some(tokio::spawn(produce(self.ctx.clone(), statement, tx))));
        let fit = self.fit();
        let format = self.mode;
        let to_screen = self.output.is_none();
        let progress = Progress::new(self.interactive && std::io::stderr().is_terminal());
        let mut out = Some(sink(&mut self.output));
        let consume = async {
            let mut writer = None;
            let mut rows = 0u64;
            while let Some(msg) = rx.recv().await {
                match msg? {
                    // DDL (CREATE VIEW, SET, ...) has nothing to show.
                    Msg::Schema(schema) if schema.fields().is_empty() => {}
                    Msg::Schema(schema) => {
                        let out = out.take().expect("one schema per statement");
                        writer = Some(ResultWriter::try_new_fitted(out, schema, format, fit)?);
                    }
                    Msg::Batch(batch) => {
                        rows += batch.num_rows() as u64;
                        if let Some(writer) = &mut writer {
                            // The table is written at the end; the other layouts as they come.
                            if to_screen && format != OutputFormat::Table {
                                progress.stop();
                            }
                            writer.write(&batch)?;
                        }
                    }
                }
            }
            if let Some(writer) = writer {
                if to_screen {
                    progress.stop();
                }
                writer.finish()?;
            }
            Ok(rows)
        };
        let rows = watch_with(&progress, self.interactive, consume).await?;
        // The channel also closes when the task panicked: that is no complete result.
        query.join().await?;
        if self.timer {
            let s = if rows == 1 { "" } else { "s" };
            let secs = started.elapsed().as_secs_f64();
            eprintln!("{rows} row{s} in {secs:.3} s");
        }
        Ok(())
    }

    /// How much of a result the screen shows; files get it whole.
    pub(super) fn fit(&self) -> Fit {
        if self.output.is_some() {
            return Fit::default();
        }
        let max_width = match self.max_width {
            Width::Terminal if std::io::stdout().is_terminal() => terminal_width(),
            Width::Terminal | Width::Unlimited => None,
            Width::Columns(n) => Some(n),
        };
        Fit {
            max_width,
            max_rows: self.max_rows,
        }
    }
}

/// Plan and run `statement`, sending its schema, then its batches (or the error).
async fn produce(
    ctx: datafusion::prelude::SessionContext,
    statement: Statement,
    tx: mpsc::Sender<Result<Msg>>,
) {
    let run = async {
        let plan = ctx.state().statement_to_plan(statement).await?;
        let df = ctx.execute_logical_plan(plan).await?;
        let mut stream = df.execute_stream().await?;
        if tx.send(Ok(Msg::Schema(stream.schema()))).await.is_err() {
            return Ok(());
        }
        while let Some(batch) = stream.next().await {
            if tx.send(Ok(Msg::Batch(batch?))).await.is_err() {
                break;
            }
        }
        Ok::<(), Error>(())
    };
    if let Err(e) = run.await {
        let _ = tx.send(Err(e)).await;
    }
}

/// Where results are written: the `.output` file or standard output.
pub(super) fn sink(output: &mut Option<(PathBuf, AtomicFile)>) -> Box<dyn Write + Send + '_> {
    match output {
        Some((_, file)) => Box::new(BufWriter::new(file.file())),
        None => Box::new(BufWriter::new(Screen)),
    }
}

/// Set once standard output's reader has gone away (`| head`); the script then ends quietly.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether standard output's reader has gone away.
pub(super) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Standard output that notes a closed pipe: encoders wrap the error in their own.
struct Screen;

impl Write for Screen {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        note_closed(std::io::stdout().write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        note_closed(std::io::stdout().flush())
    }
}

fn note_closed<T>(result: std::io::Result<T>) -> std::io::Result<T> {
    if let Err(e) = &result {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
        }
    }
    result
}

/// Run `work`; on a terminal, Ctrl-C cancels it ([`Error::Cancelled`]) and its time shows
/// once it runs long.
pub(super) async fn watch<T>(
    interactive: bool,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    let progress = Progress::new(interactive && std::io::stderr().is_terminal());
    watch_with(&progress, interactive, work).await
}

async fn watch_with<T>(
    progress: &Progress,
    interactive: bool,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    if !interactive {
        return work.await;
    }
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(work, ctrl_c);
    let mut listening = true;
    let result = loop {
        tokio::select! {
            biased;
            signal = &mut ctrl_c, if listening => match signal {
                Ok(()) => break Err(Error::Cancelled),
                // No handler could be installed: run uncancellable.
                Err(_) => listening = false,
            },
            result = &mut work => break result,
            _ = ticker.tick() => progress.tick(),
        }
    };
    progress.stop();
    result
}

/// The running time on stderr, on one line that is wiped before results are written.
struct Progress {
    enabled: Cell<bool>,
    shown: Cell<bool>,
    started: Instant,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        Progress {
            enabled: Cell::new(enabled),
            shown: Cell::new(false),
            started: Instant::now(),
        }
    }

    fn tick(&self) {
        let elapsed = self.started.elapsed();
        if self.enabled.get() && elapsed >= SHOW_TIME_AFTER {
            let mut err = std::io::stderr();
            let _ = write!(
                err,
                "\r\x1b[2Krunning {:.1} s (Ctrl-C cancels)",
                elapsed.as_secs_f64()
            );
            let _ = err.flush();
            self.shown.set(true);
        }
    }

    /// Wipe the line and show no more.
    fn stop(&self) {
        self.enabled.set(false);
        if self.shown.replace(false) {
            let mut err = std::io::stderr();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// A task that ends when its handle is dropped (a cancelled statement stops computing).
struct AbortOnDrop<T>(Option<JoinHandle<T>>);

impl<T> AbortOnDrop<T> {
    /// Wait for the task's end; its panic is an internal error.
    async fn join(mut self) -> Result<T> {
        let handle = self.0.take().expect("joined once");
        handle
            .await
            .map_err(|e| Error::Internal(format!("the query task failed: {e}")))
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        if let Some(handle) = &self.0 {
            handle.abort();
        }
    }
}
