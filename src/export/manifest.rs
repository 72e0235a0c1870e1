//! The export plans' manifest, read from the `-- @export ...` header line of each
//! `sql/export/` file: which formats run the plan, where its events go in the Chrome
//! document, and whether its rows are held once computed. The Chrome document's order and
//! the held set are derived from it; nothing else lists the plans.
//!
//! ```text
//! -- @export chrome section=events order=3   a Chrome plan, 3rd among the window's events
//! -- @export chrome section=metadata order=1 the window's metadata events, 1st
//! -- @export chrome section=cpu              the CPU trace's own events (chrome_cpu_event)
//! -- @export chrome section=span             the profiler span, after every other event
//! -- @export pftrace                         a plan the .pftrace export runs
//! -- @export held                            a helper whose rows are computed once, held
//! -- @export held sorted=a sorted=b,c         ... held sorted by a, which also orders them by
//!                                             (b, c): the planner is told both orders
//! -- @export held readers_first               ... whose readers run before the other plans
//!                                             that read held rows (see below)
//! ```
//! The Chrome plans that read held rows run one after another, the readers of a
//! `readers_first` view first, so that the widest row sets are never held at once; the other
//! plans stream beside them.
//! A file without the line is a helper (its name starts with `_`) that plans read.

use std::sync::OnceLock;

use crate::error::Error;
use crate::sql::{SqlObject, EXPORT};
use crate::Result;

/// Where a Chrome plan's events go in `traceEvents`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Section {
    /// the CPU trace's own events (its leading metadata, then the rest)
    Cpu,
    /// the window's metadata events, between the CPU trace's leading metadata and the rest
    Metadata,
    /// the window's events, after the CPU trace's
    Events,
    /// the profiler span over all the others, last
    Span,
}

/// One `sql/export/` object and what its header line declares.
#[derive(Debug)]
pub(crate) struct Plan {
    pub name: &'static str,
    /// its place in the Chrome document, when the Chrome export runs it
    pub chrome: Option<(Section, u32)>,
    /// whether the .pftrace export runs it
    pub pftrace: bool,
    /// whether its rows are computed once and held (the row sets several plans read)
    pub held: bool,
    /// the orders its held rows are in, each a list of columns (ascending, NULLs last):
    /// sorted by the first, and so also by the others
    pub sorted: Vec<Vec<&'static str>>,
    /// whether the plans reading its held rows run before the other readers of held rows
    pub readers_first: bool,
}

/// Every export object, in registry order.
pub(crate) fn plans() -> &'static [Plan] {
    static PLANS: OnceLock<Vec<Plan>> = OnceLock::new();
    PLANS.get_or_init(|| {
        EXPORT
            .iter()
            .map(parse)
            .collect::<Result<_>>()
            .expect("the sql/export headers parse (the manifest tests check every file)")
    })
}

/// The Chrome plans of `section`, in document order.
pub(crate) fn chrome_section(section: Section) -> Vec<&'static str> {
    let mut placed: Vec<(u32, &'static str)> = plans()
        .iter()
        .filter_map(|p| match p.chrome {
            Some((s, order)) if s == section => Some((order, p.name)),
            _ => None,
        })
        .collect();
    placed.sort();
    placed.into_iter().map(|(_, name)| name).collect()
}

/// The plans the .pftrace export runs (its code names them; a test holds the two together).
pub(crate) fn pftrace_plans() -> Vec<&'static str> {
    plans()
        .iter()
        .filter(|p| p.pftrace)
        .map(|p| p.name)
        .collect()
}

/// `name`'s plan, when its rows are held once computed.
pub(crate) fn held(name: &str) -> Option<&'static Plan> {
    plans().iter().find(|p| p.held && p.name == name)
}

/// `object`'s header line, read.
fn parse(object: &SqlObject) -> Result<Plan> {
    let bad = |why: String| Error::Internal(format!("sql/{}: @export header: {why}", object.path));
    let mut plan = Plan {
        name: object.name,
        chrome: None,
        pftrace: false,
        held: false,
        sorted: Vec::new(),
        readers_first: false,
    };
    let headers = object
        .text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("-- @export"));
    for header in headers {
        let (mut section, mut order, mut chrome) = (None, None, false);
        for word in header.split_whitespace() {
            match word.split_once('=') {
                None if word == "chrome" => chrome = true,
                None if word == "pftrace" => plan.pftrace = true,
                None if word == "held" => plan.held = true,
                None if word == "readers_first" => plan.readers_first = true,
                Some(("section", s)) => {
                    section = Some(match s {
                        "cpu" => Section::Cpu,
                        "metadata" => Section::Metadata,
                        "events" => Section::Events,
                        "span" => Section::Span,
                        other => return Err(bad(format!("unknown section `{other}`"))),
                    })
                }
                Some(("sorted", columns)) => plan.sorted.push(columns.split(',').collect()),
                Some(("order", n)) => {
                    order = Some(n.parse().map_err(|_| bad(format!("order `{n}`")))?)
                }
                _ => return Err(bad(format!("unknown word `{word}`"))),
            }
        }
        if (!plan.sorted.is_empty() || plan.readers_first) && !plan.held {
            return Err(bad("sorted= and readers_first are for held plans".into()));
        }
        if chrome {
            let section = section.ok_or_else(|| bad("chrome without section=".into()))?;
            let needs_order = matches!(section, Section::Metadata | Section::Events);
            if needs_order != order.is_some() {
                return Err(bad(
                    "order= goes with (only) sections metadata and events".into()
                ));
            }
            plan.chrome = Some((section, order.unwrap_or(0)));
        } else if section.is_some() || order.is_some() {
            return Err(bad("section= and order= are for chrome plans".into()));
        }
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `name` appears as a whole word in `text`.
    fn mentions(text: &str, name: &str) -> bool {
        text.match_indices(name).any(|(at, _)| {
            let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
            let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
            let after = text[at + name.len()..]
                .chars()
                .next()
                .is_none_or(|c| !word(c));
            before && after
        })
    }

    #[test]
    fn every_header_parses() {
        for object in EXPORT {
            parse(object).unwrap();
        }
    }

    #[test]
    fn every_plan_is_run_by_a_format_and_every_helper_is_read() {
        for plan in plans() {
            let runs = plan.chrome.is_some() || plan.pftrace;
            if plan.name.starts_with('_') {
                // A helper is read by another object, or by a format's code (then declared).
                let read = EXPORT
                    .iter()
                    .any(|o| o.name != plan.name && mentions(o.text, plan.name));
                assert!(read || runs, "{}: no plan reads it", plan.name);
            } else {
                assert!(runs, "{}: registered, but no format runs it", plan.name);
                assert!(!plan.held, "{}: only `_` helpers are held", plan.name);
            }
        }
    }

    /// The export objects the .pftrace code reads: names in its string literals and after
    /// FROM, leaving out functions.
    fn named_by_pftrace_code() -> Vec<String> {
        let sources = [
            include_str!("pftrace/mod.rs"),
            include_str!("pftrace/render.rs"),
            include_str!("pftrace/slices.rs"),
            include_str!("pftrace/tracks.rs"),
            include_str!("pftrace/columns.rs"),
            include_str!("pftrace/cpu.rs"),
        ];
        let functions = ["pftrace_hw_queue"];
        let mut names = Vec::new();
        for text in sources {
            for (at, _) in text.match_indices("pftrace_") {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                let start = text[..at].trim_end_matches(word).len();
                let end = at
                    + text[at..]
                        .find(|c: char| !word(c))
                        .unwrap_or(text.len() - at);
                let quoted = text[..start].ends_with('"');
                let queried = text[..start].ends_with("FROM ") || text[..start].ends_with("JOIN ");
                let name = &text[start..end];
                if (quoted || queried) && !functions.contains(&name) {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    #[test]
    fn the_pftrace_code_reads_exactly_the_plans_declared_for_it() {
        let named = named_by_pftrace_code();
        for name in &named {
            assert!(
                pftrace_plans().contains(&name.as_str()),
                "the .pftrace code reads `{name}`, which no sql/export file declares for pftrace"
            );
        }
        for plan in pftrace_plans() {
            assert!(
                named.iter().any(|n| n == plan),
                "{plan}: declared for pftrace, but the .pftrace code never reads it"
            );
        }
    }

    #[test]
    fn the_chrome_document_places_each_plan_once() {
        for section in [Section::Metadata, Section::Events] {
            let orders: Vec<u32> = plans()
                .iter()
                .filter_map(|p| p.chrome.filter(|(s, _)| *s == section).map(|(_, o)| o))
                .collect();
            let mut unique = orders.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), orders.len(), "{section:?}: an order twice");
        }
        assert_eq!(chrome_section(Section::Cpu), ["chrome_cpu_event"]);
        assert_eq!(chrome_section(Section::Span), ["chrome_trace_span"]);
    }

    #[test]
    fn bad_headers_are_errors() {
        for text in [
            "-- @export chrome\nSELECT 1",
            "-- @export chrome section=events\nSELECT 1",
            "-- @export chrome section=cpu order=2\nSELECT 1",
            "-- @export chrome section=nowhere order=1\nSELECT 1",
            "-- @export pftrace order=1\nSELECT 1",
            "-- @export chrom section=events order=1\nSELECT 1",
        ] {
            let object = SqlObject {
                name: "x",
                path: "export/x.sql",
                text: Box::leak(text.to_string().into_boxed_str()),
            };
            assert!(parse(&object).is_err(), "{text}");
        }
    }
}
