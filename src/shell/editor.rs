//! Shell line reading: the rustyline editor with multi-line statements (Enter runs once the
//! text ends in `;`), persistent history, and tab completion of SQL keywords, dot-commands,
//! and the open window's tables, views and columns.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use datafusion::prelude::SessionContext;
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use super::dot;
use super::input::is_ready;
use crate::error::Error;
use crate::Result;

/// The editor the shell reads lines with.
pub type LineEditor = Editor<ShellHelper, FileHistory>;

/// SQL keywords and common functions offered by completion.
const KEYWORDS: &[&str] = &[
    "select",
    "from",
    "where",
    "group",
    "by",
    "order",
    "having",
    "limit",
    "offset",
    "join",
    "inner",
    "left",
    "right",
    "full",
    "outer",
    "cross",
    "on",
    "using",
    "as",
    "and",
    "or",
    "not",
    "in",
    "is",
    "null",
    "like",
    "ilike",
    "between",
    "case",
    "when",
    "then",
    "else",
    "end",
    "distinct",
    "union",
    "all",
    "intersect",
    "except",
    "with",
    "asc",
    "desc",
    "nulls",
    "first",
    "last",
    "over",
    "partition",
    "rows",
    "range",
    "create",
    "replace",
    "view",
    "table",
    "drop",
    "if",
    "exists",
    "explain",
    "analyze",
    "describe",
    "show",
    "columns",
    "tables",
    "values",
    "cast",
    "true",
    "false",
    "interval",
    "filter",
    "within",
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "median",
    "stddev",
    "approx_percentile_cont",
    "approx_distinct",
    "array_agg",
    "string_agg",
    "row_number",
    "rank",
    "dense_rank",
    "lag",
    "lead",
    "coalesce",
    "greatest",
    "least",
    "date_trunc",
    "to_timestamp",
    "length",
    "lower",
    "upper",
    "substr",
    "regexp_like",
    "regexp_replace",
    "generate_series",
    "unnest",
];

/// Completion, multi-line validation; no hints, no colours.
pub struct ShellHelper {
    /// Table and view names of the open window.
    tables: Vec<String>,
    /// Column names of those tables, deduplicated.
    columns: Vec<String>,
    files: FilenameCompleter,
}

impl ShellHelper {
    pub fn new() -> Self {
        ShellHelper {
            tables: Vec::new(),
            columns: Vec::new(),
            files: FilenameCompleter::new(),
        }
    }

    /// Learn the names completion offers from `ctx`'s tables and views.
    pub async fn learn(&mut self, ctx: &SessionContext) -> Result<()> {
        let tables = super::catalog_tables(ctx).await?;
        let mut columns: Vec<String> = tables
            .iter()
            .flat_map(|t| t.schema.fields().iter().map(|f| f.name().clone()))
            .collect();
        columns.sort();
        columns.dedup();
        self.tables = tables.into_iter().map(|t| t.name).collect();
        self.columns = columns;
        Ok(())
    }

    /// The candidates for the word that ends at `pos`: (its start, candidates).
    pub fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &before[start..];
        let head = &before[..start];
        // The name of a dot-command, at the start of the line.
        if head.trim_start() == "." {
            let at = head.len() - 1;
            let dotted = format!(".{word}");
            let names = dot::NAMES.iter().filter(|n| n.starts_with(&dotted));
            return (at, names.map(|n| n.to_string()).collect());
        }
        // The argument of a dot-command.
        if let Some(command) = head.trim_start().strip_prefix('.') {
            let command = command.split_whitespace().next().unwrap_or("");
            let choices: Vec<&str> = match command {
                "schema" => self.tables.iter().map(String::as_str).collect(),
                "mode" => dot::MODES.to_vec(),
                "timer" => vec!["on", "off"],
                "maxwidth" => vec!["auto"],
                _ => Vec::new(),
            };
            let found = choices.into_iter().filter(|c| c.starts_with(word));
            return (start, found.map(str::to_string).collect());
        }
        if word.is_empty() {
            return (start, Vec::new());
        }
        let lower = word.to_lowercase();
        let upper =
            word.chars().all(|c| !c.is_lowercase()) && word.chars().any(char::is_alphabetic);
        let mut found: Vec<String> = self
            .tables
            .iter()
            .chain(&self.columns)
            .filter(|n| n.to_lowercase().starts_with(&lower))
            .cloned()
            .collect();
        found.extend(KEYWORDS.iter().filter(|k| k.starts_with(&lower)).map(|k| {
            if upper {
                k.to_uppercase()
            } else {
                k.to_string()
            }
        }));
        found.sort();
        found.dedup();
        (start, found)
    }
}

impl Default for ShellHelper {
    fn default() -> Self {
        Self::new()
    }
}

impl Completer for ShellHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let head = line[..pos].trim_start();
        let takes_file = [".read ", ".output ", ".open ", ".export "]
            .iter()
            .any(|c| head.starts_with(c));
        if takes_file {
            return self.files.complete(line, pos, ctx);
        }
        let (start, found) = self.candidates(line, pos);
        let pairs = found
            .into_iter()
            .map(|c| Pair {
                display: c.clone(),
                replacement: c,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Validator for ShellHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if is_ready(ctx.input()) {
            ValidationResult::Valid(None)
        } else {
            ValidationResult::Incomplete
        })
    }
}

impl Hinter for ShellHelper {
    type Hint = String;
}

impl Highlighter for ShellHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Helper for ShellHelper {}

/// A line editor with the shell's helper and, when `history` is given, that file's entries.
pub fn editor(history: Option<&Path>) -> Result<LineEditor> {
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_space(true)
        .completion_type(CompletionType::List)
        .max_history_size(10_000)
        .and_then(|b| b.history_ignore_dups(true))
        .map_err(editor_error)?
        .build();
    let mut editor = LineEditor::with_config(config).map_err(editor_error)?;
    editor.set_helper(Some(ShellHelper::new()));
    if let Some(path) = history {
        if path.exists() {
            editor
                .load_history(path)
                .map_err(|e| history_error(path, e))?;
        }
    }
    Ok(editor)
}

/// Add `entry` to the history and to its file (kept across sessions).
pub fn remember(editor: &mut LineEditor, history: Option<&Path>, entry: &str) -> Result<()> {
    editor.add_history_entry(entry).map_err(editor_error)?;
    if let Some(path) = history {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        editor
            .append_history(path)
            .map_err(|e| history_error(path, e))?;
    }
    Ok(())
}

/// The history file: `$TRACESQL_HISTORY` (empty: no history), else
/// `$XDG_DATA_HOME/tracesql/history`, else `~/.local/share/tracesql/history`.
pub fn history_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TRACESQL_HISTORY") {
        return (!path.is_empty()).then(|| PathBuf::from(path));
    }
    let data = match std::env::var_os("XDG_DATA_HOME") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".local/share"),
    };
    Some(data.join("tracesql").join("history"))
}

pub fn editor_error(e: rustyline::error::ReadlineError) -> Error {
    Error::Internal(format!("line editor: {e}"))
}

fn history_error(path: &Path, e: rustyline::error::ReadlineError) -> Error {
    match e {
        rustyline::error::ReadlineError::Io(io) => Error::io(path, io),
        other => Error::Usage(format!("{}: {other}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper() -> ShellHelper {
        ShellHelper {
            tables: vec!["kernel".into(), "launch".into()],
            columns: vec!["correlation_id".into(), "kind".into(), "name".into()],
            files: FilenameCompleter::new(),
        }
    }

    #[test]
    fn completes_tables_columns_and_keywords_in_the_typed_case() {
        let h = helper();
        assert_eq!(
            h.candidates("select * from ker", 17),
            (14, vec!["kernel".to_string()])
        );
        let (_, found) = h.candidates("select ki", 9);
        assert_eq!(found, vec!["kind".to_string()]);
        let (_, found) = h.candidates("SEL", 3);
        assert_eq!(found, vec!["SELECT".to_string()]);
        let (_, found) = h.candidates("select corr", 11);
        assert_eq!(found, vec!["correlation_id".to_string()]);
        assert!(h.candidates("select ", 7).1.is_empty());
    }

    #[test]
    fn completes_dot_commands_and_their_arguments() {
        let h = helper();
        assert_eq!(h.candidates(".ta", 3), (0, vec![".tables".to_string()]));
        assert_eq!(
            h.candidates(".max", 4).1,
            vec![".maxrows".to_string(), ".maxwidth".to_string()]
        );
        assert_eq!(h.candidates(".mode nd", 8), (6, vec!["ndjson".to_string()]));
        assert_eq!(h.candidates(".schema la", 10).1, vec!["launch".to_string()]);
    }
}
