//! Stage `shell`: a SQL session over one window or archive at a time. Typed lines (a
//! terminal) or a script (standard input, `.read FILE`) in; results through the sinks to the
//! screen or to an `.output` file. `input` cuts statements, `dot` parses dot-commands,
//! `editor` reads lines and completes names, `run` runs statements (cancellable) and writes
//! their results.

mod dot;
mod editor;
mod input;
mod run;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::TableType;
use datafusion::prelude::SessionContext;
use rustyline::error::ReadlineError;

use self::dot::{Dot, Width};
pub use self::editor::history_path;
use self::input::Item;
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::{OutputFormat, ResultWriter};
use crate::window::Window;
use crate::Result;

/// What a shell session opens and how it treats errors.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    /// The window or archive opened first.
    pub window: PathBuf,
    /// Not on a terminal: run the rest of the script after an error (the exit status still
    /// tells there was one).
    pub keep_going: bool,
    /// Where the typed history is kept (None: nowhere); see [`history_path`].
    pub history: Option<PathBuf>,
}

/// How a script went: the errors it met (each already printed on one line). A typed session
/// always ends well: its errors were shown as they came.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub errors: usize,
    /// Whether one of them was an internal error (a bug) rather than the input's.
    pub internal: bool,
}

/// Rows shown by default on a terminal in the table and line modes.
pub const DEFAULT_MAX_ROWS: usize = 40;

/// `.read` files read from `.read` files, at most.
const MAX_READ_DEPTH: usize = 16;

/// Run a session: interactive when standard input is a terminal, else the script it holds.
/// Fails only when the first window cannot be opened or the terminal cannot be driven.
pub async fn run(config: ShellConfig) -> Result<Outcome> {
    let mut shell = Shell::open(&config.window).await?;
    let outcome = if std::io::stdin().is_terminal() {
        shell.interactive = true;
        shell.prompt_loop(config.history.as_deref()).await?
    } else {
        shell.script_loop(config.keep_going).await?
    };
    // A script that stopped at an error leaves no half-written `.output` file behind.
    if outcome.errors == 0 || shell.interactive || config.keep_going {
        if let Err(e) = shell.switch_output(None) {
            report(&Failure::from(e));
            return Ok(Outcome {
                errors: outcome.errors + 1,
                ..outcome
            });
        }
    }
    Ok(outcome)
}

/// What to do after an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
}

/// An error, with where in a script it happened.
struct Failure {
    place: Option<String>,
    error: Error,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure { place: None, error }
    }
}

impl Failure {
    fn at(self, source: &str, line: usize) -> Self {
        Failure {
            place: self.place.or_else(|| Some(format!("{source}:{line}"))),
            error: self.error,
        }
    }
}

/// Print a failure on one line.
fn report(failure: &Failure) {
    if matches!(failure.error, Error::Cancelled) {
        eprintln!("cancelled");
        return;
    }
    let text = failure.error.to_string();
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match &failure.place {
        Some(place) => eprintln!("error: {place}: {text}"),
        None => eprintln!("error: {text}"),
    }
}

/// The session's state.
struct Shell {
    ctx: SessionContext,
    /// The open window or archive; kept alive with its catalog.
    window: Window,
    mode: OutputFormat,
    max_rows: Option<usize>,
    max_width: Width,
    timer: bool,
    /// Results go here when set, else to the screen.
    output: Option<(PathBuf, AtomicFile)>,
    /// Typed at a terminal: Ctrl-C cancels, long statements show their time.
    interactive: bool,
    read_depth: usize,
}

impl Shell {
    async fn open(path: &Path) -> Result<Shell> {
        let (window, ctx) = open_window(path).await?;
        let on_terminal = std::io::stdout().is_terminal();
        Ok(Shell {
            ctx,
            window,
            mode: OutputFormat::Table,
            max_rows: on_terminal.then_some(DEFAULT_MAX_ROWS),
            max_width: Width::Terminal,
            timer: false,
            output: None,
            interactive: false,
            read_depth: 0,
        })
    }

    /// Read, run, repeat, until Ctrl-D or `.quit`.
    async fn prompt_loop(&mut self, history: Option<&Path>) -> Result<Outcome> {
        let mut editor = editor::editor(history)?;
        eprintln!(
            "tracesql shell on {} (.help for help, Ctrl-D to leave)",
            self.window.root.display()
        );
        self.learn_names(&mut editor).await;
        loop {
            let text = match editor.readline("tracesql> ") {
                Ok(text) => text,
                Err(ReadlineError::Interrupted) => continue,
                Err(ReadlineError::Eof) => break,
                Err(e) => return Err(editor::editor_error(e)),
            };
            let trimmed = text.trim();
            if trimmed.is_empty() {
                continue;
            }
            if let Err(e) = editor::remember(&mut editor, history, trimmed) {
                report(&e.into());
            }
            let item = if trimmed.starts_with('.') {
                Item::Dot {
                    text: trimmed.to_string(),
                    line: 1,
                }
            } else {
                Item::Sql { text, line: 1 }
            };
            match self.handle(item).await {
                Ok(Flow::Quit) => break,
                Ok(Flow::Go) => {}
                Err(failure) if is_broken_pipe(&failure.error) => break,
                // Typed: the error is shown and the session goes on, its exit status untouched.
                Err(failure) => report(&failure),
            }
            self.learn_names(&mut editor).await;
        }
        Ok(Outcome::default())
    }

    /// Run standard input's statements and dot-commands in order.
    async fn script_loop(&mut self, keep_going: bool) -> Result<Outcome> {
        let mut outcome = Outcome::default();
        let mut splitter = input::Splitter::default();
        let mut lines = std::io::stdin().lock().lines();
        loop {
            let item = match lines.next() {
                Some(Ok(line)) => splitter.push(&line),
                Some(Err(e)) => return Err(Error::io("<stdin>", e)),
                None => break,
            };
            let Some(item) = item else { continue };
            if !self.script_item(item, keep_going, &mut outcome).await {
                return Ok(outcome);
            }
        }
        if let Some(item) = splitter.finish() {
            self.script_item(item, keep_going, &mut outcome).await;
        }
        Ok(outcome)
    }

    /// Run one item of standard input; false when the script ends here.
    async fn script_item(&mut self, item: Item, keep_going: bool, outcome: &mut Outcome) -> bool {
        let line = item.line();
        match self.handle(item).await {
            Ok(Flow::Go) => true,
            Ok(Flow::Quit) => false,
            Err(failure) if is_broken_pipe(&failure.error) => false,
            Err(failure) => {
                outcome.note(&failure.error);
                report(&failure.at("<stdin>", line));
                keep_going
            }
        }
    }

    async fn handle(&mut self, item: Item) -> Result<Flow, Failure> {
        match item {
            Item::Dot { text, .. } => self.dot(&text).await,
            Item::Sql { text, .. } => {
                self.sql(&text).await?;
                Ok(Flow::Go)
            }
        }
    }

    async fn dot(&mut self, text: &str) -> Result<Flow, Failure> {
        match dot::parse(text)? {
            Dot::Help => print_help(),
            Dot::Quit => return Ok(Flow::Quit),
            Dot::Tables => self.tables().await?,
            Dot::Schema(name) => self.schema(name.as_deref()).await?,
            Dot::Mode(mode) => self.mode = mode,
            Dot::MaxRows(n) => self.max_rows = n,
            Dot::MaxWidth(w) => self.max_width = w,
            Dot::Timer(on) => self.timer = on,
            Dot::Read(path) => return self.read(&path).await,
            Dot::Output(path) => self.switch_output(path)?,
            Dot::Open(path) => {
                let (window, ctx) = run::watch(self.interactive, open_window(&path)).await?;
                self.window = window;
                self.ctx = ctx;
                eprintln!("opened {}", path.display());
            }
            Dot::Export { output, predicate } => self.export(output, predicate).await?,
            Dot::Doctor => self.doctor().await?,
            Dot::Report { name, params } => self.report(&name, &params).await?,
        }
        Ok(Flow::Go)
    }

    /// `.read FILE`: its items in order; the first error stops it, naming the file and line.
    async fn read(&mut self, path: &Path) -> Result<Flow, Failure> {
        if self.read_depth >= MAX_READ_DEPTH {
            let text = format!(
                "{}: .read nested more than {MAX_READ_DEPTH} deep",
                path.display()
            );
            return Err(Error::Usage(text).into());
        }
        let script = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let source = path.display().to_string();
        self.read_depth += 1;
        let mut flow = Ok(Flow::Go);
        for item in input::split(&script) {
            let line = item.line();
            match Box::pin(self.handle(item)).await {
                Ok(Flow::Go) => {}
                Ok(Flow::Quit) => {
                    flow = Ok(Flow::Quit);
                    break;
                }
                Err(failure) => {
                    flow = Err(failure.at(&source, line));
                    break;
                }
            }
        }
        self.read_depth -= 1;
        flow
    }

    /// Commit the current `.output` file, then send results to `path` (or the screen).
    fn switch_output(&mut self, path: Option<PathBuf>) -> Result<()> {
        if let Some((_, file)) = self.output.take() {
            file.commit()?;
        }
        if let Some(path) = path {
            crate::file::refuse_writing_into(&path, &[&self.window.root], ".output")?;
            let file = AtomicFile::create(&path)?;
            self.output = Some((path, file));
        }
        Ok(())
    }

    /// Text of a dot-command (`.tables`, `.schema`) to where results go.
    fn write_text(&mut self, text: &str) -> Result<()> {
        let written = {
            let mut out = run::sink(&mut self.output);
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        };
        written.map_err(|e| match &self.output {
            Some((path, _)) => Error::io(path, e),
            None => Error::io("<stdout>", e),
        })
    }

    async fn tables(&mut self) -> Result<()> {
        let tables = catalog_tables(&self.ctx).await?;
        let width = tables.iter().map(|t| t.name.len()).max().unwrap_or(0);
        let mut text = String::new();
        for t in &tables {
            let kind = if t.view { "view" } else { "table" };
            text.push_str(&format!("{:<width$}  {kind}\n", t.name));
        }
        self.write_text(&text)
    }

    async fn schema(&mut self, name: Option<&str>) -> Result<()> {
        let tables = catalog_tables(&self.ctx).await?;
        let chosen: Vec<&TableInfo> = tables
            .iter()
            .filter(|t| name.is_none_or(|n| t.name.eq_ignore_ascii_case(n)))
            .collect();
        if let (Some(name), true) = (name, chosen.is_empty()) {
            return Err(Error::Usage(format!(
                "no table or view `{name}` (.tables lists them)"
            )));
        }
        let mut text = String::new();
        for t in chosen {
            text.push_str(&format!(
                "{}{}\n",
                t.name,
                if t.view { " (view)" } else { "" }
            ));
            let width = t.schema.fields().iter().map(|f| f.name().len()).max();
            for field in t.schema.fields() {
                let width = width.unwrap_or(0);
                text.push_str(&format!(
                    "    {:<width$}  {}\n",
                    field.name(),
                    field.data_type()
                ));
            }
        }
        self.write_text(&text)
    }

    /// `.export`: the open window through the library's exporters, as `tracesql export`.
    async fn export(&mut self, output: PathBuf, predicate: Option<String>) -> Result<()> {
        use crate::export::{export_chrome, export_pftrace, ExportConfig, PftraceConfig};
        let filter = crate::export::RowFilter {
            predicate,
            ..Default::default()
        };
        let window = self.window.root.clone();
        let pftrace = output.to_string_lossy().contains(".pftrace");
        let started = std::time::Instant::now();
        let work = async {
            if pftrace {
                export_pftrace(&PftraceConfig {
                    window,
                    output: output.clone(),
                    compression_level: 1,
                    arch: None,
                    process_id: None,
                    process_name: None,
                    filter,
                })
                .await
            } else {
                export_chrome(&ExportConfig {
                    window,
                    output: output.clone(),
                    trace_name: None,
                    filter,
                })
                .await
            }
        };
        let summary = run::watch(self.interactive, work).await?;
        eprintln!(
            "wrote {} {} to {} in {:.2} s",
            summary.events,
            if pftrace { "packets" } else { "events" },
            output.display(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// `.doctor`: the data-quality checks over the open window, the table `tracesql doctor`
    /// prints (in the current mode); the checks stay as views for a closer look.
    async fn doctor(&mut self) -> Result<()> {
        let partitions = self.window.partition_keys.clone();
        let findings =
            run::watch(self.interactive, crate::doctor::run(&self.ctx, &partitions)).await?;
        let batch = crate::doctor::report::table(&findings)?;
        let (fit, mode) = (self.fit(), self.mode);
        let written = {
            let mut out = run::sink(&mut self.output);
            ResultWriter::try_new_fitted(&mut out, batch.schema(), mode, fit)
                .and_then(|mut writer| {
                    writer.write(&batch)?;
                    writer.finish()
                })
                .and_then(|()| out.flush().map_err(|e| Error::io("<stdout>", e)))
        };
        written?;
        eprintln!("{}", crate::doctor::report::summary_line(&findings));
        Ok(())
    }

    /// `.report NAME [KEY=VALUE]...`: the report's query, run as a statement (current mode and
    /// output); its helper views stay registered.
    async fn report(&mut self, name: &str, params: &[(String, String)]) -> Result<()> {
        let report = crate::report::find(name)?;
        let partitions = self.window.partition_keys.clone();
        crate::report::register_helpers(&self.ctx, &partitions).await?;
        let sql = report.sql(&partitions, params)?;
        self.sql(&sql).await
    }

    async fn learn_names(&mut self, editor: &mut editor::LineEditor) {
        if let Some(helper) = editor.helper_mut() {
            // Completion without names is still an editor: a failure here is not the user's.
            let _ = helper.learn(&self.ctx).await;
        }
    }
}

impl Outcome {
    fn note(&mut self, error: &Error) {
        self.errors += 1;
        self.internal |= !error.is_user_error();
    }
}

fn print_help() {
    let width = dot::HELP.iter().map(|(u, _)| u.len()).max().unwrap_or(0);
    let mut text = String::new();
    for (usage, what) in dot::HELP {
        text.push_str(&format!("{usage:<width$}  {what}\n"));
    }
    print!("{text}");
}

async fn open_window(path: &Path) -> Result<(Window, SessionContext)> {
    let window = Window::open(path)?;
    for warning in &window.warnings {
        eprintln!("{warning}");
    }
    let ctx = crate::catalog::open(&window).await?;
    Ok((window, ctx))
}

/// A table or view of the session's catalog.
struct TableInfo {
    name: String,
    view: bool,
    schema: SchemaRef,
}

/// The tables and views of `ctx`'s default schema, by name.
async fn catalog_tables(ctx: &SessionContext) -> Result<Vec<TableInfo>> {
    let state = ctx.state();
    let options = &state.config_options().catalog;
    let schema = ctx
        .catalog(&options.default_catalog)
        .and_then(|c| c.schema(&options.default_schema))
        .ok_or_else(|| Error::Internal("the session has no default schema".into()))?;
    let mut names = schema.table_names();
    names.sort();
    let mut tables = Vec::new();
    for name in names {
        if let Some(table) = schema.table(&name).await? {
            tables.push(TableInfo {
                view: table.table_type() == TableType::View,
                schema: table.schema(),
                name,
            });
        }
    }
    Ok(tables)
}

fn is_broken_pipe(error: &Error) -> bool {
    run::stdout_closed()
        || matches!(error, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}
