//! Shell dot-commands: a `.name args` line in, a [`Dot`] out (or a one-line usage error), and
//! the `.help` table that lists them.

use std::path::PathBuf;

use crate::error::Error;
use crate::sink::OutputFormat;
use crate::Result;

/// A parsed dot-command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dot {
    Help,
    Quit,
    Tables,
    Schema(Option<String>),
    Mode(OutputFormat),
    MaxRows(Option<usize>),
    MaxWidth(Width),
    Timer(bool),
    Read(PathBuf),
    Output(Option<PathBuf>),
    Open(PathBuf),
    Export {
        output: PathBuf,
        predicate: Option<String>,
    },
    Doctor,
    /// `.report NAME [KEY=VALUE]...`: one report of `tracesql report --list`.
    Report {
        name: String,
        params: Vec<(String, String)>,
    },
}

/// How wide the table may be on the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// The terminal's width (none when the screen is no terminal).
    Terminal,
    /// This many columns.
    Columns(usize),
    /// Every value in full.
    Unlimited,
}

/// The `.help` lines: usage, what it does.
pub const HELP: &[(&str, &str)] = &[
    (".help", "show this list"),
    (".tables", "list the tables and views"),
    (
        ".schema [NAME]",
        "the columns and types of NAME (or of every table)",
    ),
    (
        ".mode table|csv|json|ndjson|line",
        "how results are written (default table)",
    ),
    (
        ".maxrows N",
        "rows the table and line modes show on screen (0: all)",
    ),
    (
        ".maxwidth N|auto",
        "width of the table on screen (0: values uncut; auto: the terminal's)",
    ),
    (".timer on|off", "print each statement's run time"),
    (
        ".read FILE.sql",
        "run the statements and dot-commands of FILE",
    ),
    (
        ".output [FILE]",
        "write results to FILE (complete once switched or closed); alone: back to the screen",
    ),
    (".open PATH", "open another window or archive"),
    (
        ".export OUT.json.gz|OUT.pftrace [--where PREDICATE]",
        "export the current window as `tracesql export` does",
    ),
    (
        ".doctor",
        "data-quality checks of the window, as `tracesql doctor` prints them",
    ),
    (
        ".report NAME [KEY=VALUE]...",
        "run a report of `tracesql report --list` over the window (its parameters as KEY=VALUE)",
    ),
    (".quit", "leave the shell (also .exit, Ctrl-D)"),
];

/// The dot-commands' names, for completion.
pub const NAMES: &[&str] = &[
    ".help",
    ".tables",
    ".schema",
    ".mode",
    ".maxrows",
    ".maxwidth",
    ".timer",
    ".read",
    ".output",
    ".open",
    ".export",
    ".doctor",
    ".report",
    ".quit",
    ".exit",
];

/// The modes `.mode` takes.
pub const MODES: &[&str] = &["table", "csv", "json", "ndjson", "line"];

/// Parse one dot-command line (leading `.` included).
pub fn parse(line: &str) -> Result<Dot> {
    let line = line.trim();
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let args = words(rest)?;
    let usage = |what: &str| {
        let entry = HELP
            .iter()
            .find(|(u, _)| u.split_whitespace().next() == Some(name))
            .map_or(name, |(u, _)| u);
        Error::Usage(format!("{what}: usage {entry}"))
    };
    let no_args = |dot: Dot| match args.len() {
        0 => Ok(dot),
        _ => Err(usage("takes no argument")),
    };
    let one = |what: &str| match args.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(usage(what)),
    };
    match name {
        ".help" => no_args(Dot::Help),
        ".quit" | ".exit" => no_args(Dot::Quit),
        ".tables" => no_args(Dot::Tables),
        ".schema" => match args.as_slice() {
            [] => Ok(Dot::Schema(None)),
            [table] => Ok(Dot::Schema(Some(table.clone()))),
            _ => Err(usage("one table at most")),
        },
        ".mode" => {
            let mode = one("one mode")?;
            match mode.as_str() {
                "parquet" => Err(Error::Usage(
                    "parquet is binary: use tracesql query -o FILE.parquet".into(),
                )),
                m if MODES.contains(&m) => Ok(Dot::Mode(m.parse()?)),
                other => Err(usage(&format!("unknown mode `{other}`"))),
            }
        }
        ".maxrows" => match number(&one("a number")?) {
            Some(0) => Ok(Dot::MaxRows(None)),
            Some(n) => Ok(Dot::MaxRows(Some(n))),
            None => Err(usage("a number")),
        },
        ".maxwidth" => match one("a number or auto")?.as_str() {
            "auto" => Ok(Dot::MaxWidth(Width::Terminal)),
            n => match number(n) {
                Some(0) => Ok(Dot::MaxWidth(Width::Unlimited)),
                Some(n) => Ok(Dot::MaxWidth(Width::Columns(n))),
                None => Err(usage("a number or auto")),
            },
        },
        ".timer" => match one("on or off")?.as_str() {
            "on" => Ok(Dot::Timer(true)),
            "off" => Ok(Dot::Timer(false)),
            _ => Err(usage("on or off")),
        },
        ".read" => Ok(Dot::Read(one("one file")?.into())),
        ".output" => match args.as_slice() {
            [] => Ok(Dot::Output(None)),
            [file] => Ok(Dot::Output(Some(file.into()))),
            _ => Err(usage("one file at most")),
        },
        ".open" => Ok(Dot::Open(one("one window or archive")?.into())),
        ".export" => export(rest).ok_or_else(|| usage("an output file")),
        ".doctor" => no_args(Dot::Doctor),
        ".report" => {
            let (name, pairs) = args.split_first().ok_or_else(|| usage("a report name"))?;
            let params = pairs
                .iter()
                .map(|pair| {
                    pair.split_once('=')
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .ok_or_else(|| usage(&format!("`{pair}` is not KEY=VALUE")))
                })
                .collect::<Result<_>>()?;
            Ok(Dot::Report {
                name: name.clone(),
                params,
            })
        }
        other => Err(Error::Usage(format!(
            "unknown command `{other}` (.help lists them)"
        ))),
    }
}

/// `.export OUT [--where PREDICATE]`: the predicate is the rest of the line, as typed.
fn export(rest: &str) -> Option<Dot> {
    let (output, predicate) = match rest.split_once("--where") {
        Some((output, predicate)) => (output, Some(unquote(predicate.trim()))),
        None => (rest, None),
    };
    let output = words(output).ok()?;
    match (output.as_slice(), &predicate) {
        ([output], None) => Some(Dot::Export {
            output: output.into(),
            predicate: None,
        }),
        ([output], Some(p)) if !p.is_empty() => Some(Dot::Export {
            output: output.into(),
            predicate: Some(p.clone()),
        }),
        _ => None,
    }
}

/// The predicate without one pair of enclosing quotes (as typed for `tracesql export`).
fn unquote(text: &str) -> String {
    for q in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
            if !inner.contains(q) {
                return inner.to_string();
            }
        }
    }
    text.to_string()
}

/// Arguments split at blanks; `'…'` or `"…"` keep blanks in one argument.
fn words(text: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut word = String::new();
        if c == '\'' || c == '"' {
            chars.next();
            loop {
                match chars.next() {
                    Some(x) if x == c => break,
                    Some(x) => word.push(x),
                    None => return Err(Error::Usage(format!("unclosed {c} in `{text}`"))),
                }
            }
        } else {
            while let Some(&x) = chars.peek() {
                if x.is_whitespace() {
                    break;
                }
                word.push(x);
                chars.next();
            }
        }
        out.push(word);
    }
    Ok(out)
}

fn number(text: &str) -> Option<usize> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses() {
        assert_eq!(parse(".tables").unwrap(), Dot::Tables);
        assert_eq!(
            parse(".schema kernel").unwrap(),
            Dot::Schema(Some("kernel".into()))
        );
        assert_eq!(parse(".mode csv").unwrap(), Dot::Mode(OutputFormat::Csv));
        assert_eq!(parse(".mode line").unwrap(), Dot::Mode(OutputFormat::Line));
        assert_eq!(parse(".maxrows 0").unwrap(), Dot::MaxRows(None));
        assert_eq!(parse(".maxrows 5").unwrap(), Dot::MaxRows(Some(5)));
        assert_eq!(
            parse(".maxwidth 0").unwrap(),
            Dot::MaxWidth(Width::Unlimited)
        );
        assert_eq!(
            parse(".maxwidth auto").unwrap(),
            Dot::MaxWidth(Width::Terminal)
        );
        assert_eq!(parse(".timer on").unwrap(), Dot::Timer(true));
        assert_eq!(parse(".output").unwrap(), Dot::Output(None));
        assert_eq!(
            parse(".output 'my out.csv'").unwrap(),
            Dot::Output(Some("my out.csv".into()))
        );
        assert_eq!(parse(".exit").unwrap(), Dot::Quit);
        assert_eq!(parse(".doctor").unwrap(), Dot::Doctor);
        assert!(parse(".doctor now").is_err());
        assert_eq!(
            parse(".report gpu_gaps min_gap_ns=5000").unwrap(),
            Dot::Report {
                name: "gpu_gaps".into(),
                params: vec![("min_gap_ns".into(), "5000".into())]
            }
        );
        assert!(parse(".report").is_err());
        assert!(parse(".report gpu_gaps min_gap_ns").is_err());
    }

    #[test]
    fn export_keeps_the_predicate_as_typed() {
        assert_eq!(
            parse(".export t.json.gz --where name like '%nccl%' and dur > 10").unwrap(),
            Dot::Export {
                output: "t.json.gz".into(),
                predicate: Some("name like '%nccl%' and dur > 10".into()),
            }
        );
        assert_eq!(
            parse(".export t.pftrace --where \"stream_id = 7\"").unwrap(),
            Dot::Export {
                output: "t.pftrace".into(),
                predicate: Some("stream_id = 7".into()),
            }
        );
        assert!(parse(".export").is_err());
        assert!(parse(".export t.json --where").is_err());
    }

    #[test]
    fn mistakes_are_one_line_with_the_usage() {
        let e = parse(".mode xml").unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown mode `xml`: usage .mode table|csv|json|ndjson|line"
        );
        let e = parse(".maxrows many").unwrap_err().to_string();
        assert!(e.contains("usage .maxrows N"), "{e}");
        let e = parse(".frobnicate").unwrap_err().to_string();
        assert!(e.contains("unknown command `.frobnicate`"), "{e}");
        assert!(parse(".tables extra").is_err());
    }

    #[test]
    fn every_command_has_one_help_line() {
        for name in NAMES.iter().filter(|n| **n != ".exit") {
            let entries = HELP
                .iter()
                .filter(|(u, _)| u.split_whitespace().next() == Some(name))
                .count();
            assert_eq!(entries, 1, "{name}");
        }
        assert_eq!(HELP.len(), NAMES.len() - 1);
    }
}
