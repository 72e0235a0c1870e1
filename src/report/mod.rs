//! Stage `report`: the canned analyses of `sql/reports/`, each one documented query, run over
//! a catalog (one window or an archive, whose partition columns lead every report).
//!
//! In: a catalog's `SessionContext`, a report name and parameter values. Out: the report's
//! SQL (for a sink to stream) or its batches ([`ReportOutput`]), which `html` renders as one
//! self-contained page (tables and inline SVG plots, no script, nothing fetched).
//!
//! A report file opens with `-- @report NAME: one line`, then one `-- @param NAME = DEFAULT:
//! what it is` line per parameter, then free comment lines; `{{param NAME}}` in the query takes
//! the value (a number, or text where the default is quoted: `'ProfilerStep#%'`), and
//! `{{include NAME}}` the statements of `sql/scripts/NAME.sql`, which compute stages into
//! tables that the report's query (its last statement) reads. Files named `_*` are helper
//! views the reports share.

mod columns;
pub mod html;
mod output;
mod plots;
#[cfg(test)]
mod sample;
pub mod svg;

use std::sync::Arc;

use datafusion::prelude::SessionContext;

pub use output::ReportOutput;

use crate::error::Error;
use crate::sql::{SqlObject, REPORTS, SCRIPTS};
use crate::Result;

/// A report parameter, with its default as written in the report's header.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub default: String,
    pub doc: String,
}

/// A report of `sql/reports/`, its header read.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: &'static str,
    /// The one line after `@report NAME:`.
    pub title: String,
    pub params: Vec<Param>,
    object: &'static SqlObject,
}

/// Every report, in registry order (helpers left out).
pub fn reports() -> Vec<Report> {
    REPORTS
        .iter()
        .filter(|o| !o.name.starts_with('_'))
        .map(|object| parse_header(object).expect("report headers are checked by a unit test"))
        .collect()
}

/// The report called `name`, or a usage error listing the names.
pub fn find(name: &str) -> Result<Report> {
    reports()
        .into_iter()
        .find(|r| r.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = reports().iter().map(|r| r.name).collect();
            Error::Usage(format!(
                "no report named {name:?}; the reports are: {}",
                names.join(", ")
            ))
        })
}

fn parse_header(object: &'static SqlObject) -> Result<Report> {
    let bad = |reason: &str| Error::Internal(format!("sql/{}: {reason}", object.path));
    let mut lines = object.text.lines();
    let first = lines.next().unwrap_or_default();
    let (name, title) = first
        .strip_prefix("-- @report ")
        .and_then(|rest| rest.split_once(':'))
        .ok_or_else(|| bad("must open with `-- @report NAME: one line`"))?;
    if name.trim() != object.name {
        return Err(bad("the @report name must be the file's name"));
    }
    let mut params = Vec::new();
    for line in lines.take_while(|l| l.starts_with("--")) {
        let Some(rest) = line.strip_prefix("-- @param ") else {
            continue;
        };
        let (assignment, doc) = rest
            .split_once(':')
            .ok_or_else(|| bad("`-- @param NAME = DEFAULT: what it is`"))?;
        let (pname, default) = assignment
            .split_once('=')
            .ok_or_else(|| bad("`-- @param NAME = DEFAULT: what it is`"))?;
        params.push(Param {
            name: pname.trim().to_string(),
            default: default.trim().to_string(),
            doc: doc.trim().to_string(),
        });
    }
    Ok(Report {
        name: object.name,
        title: title.trim().to_string(),
        params,
        object,
    })
}

impl Param {
    /// A text parameter: its default is a quoted SQL string.
    fn is_text(&self) -> bool {
        self.default.starts_with('\'')
    }
}

/// `text` with each `{{include NAME}}` replaced by the script `sql/scripts/NAME.sql`.
fn with_includes(text: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{include ") {
        out.push_str(&rest[..start]);
        let after = &rest[start + "{{include ".len()..];
        let end = after
            .find("}}")
            .ok_or_else(|| Error::Internal("unclosed {{include in a sql/ file".into()))?;
        let name = after[..end].trim();
        let script = SCRIPTS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| Error::Internal(format!("no script sql/scripts/{name}.sql")))?;
        out.push_str(script.text);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `text` with each table its statements create (`CREATE OR REPLACE TABLE name`) renamed
/// `name__report`: reports that run side by side in one session (`report all`) each compute
/// their own stages.
fn own_tables(text: &str, report: &str) -> String {
    const CREATE: &str = "CREATE OR REPLACE TABLE ";
    let created: Vec<&str> = text
        .match_indices(CREATE)
        .filter_map(|(at, _)| text[at + CREATE.len()..].split_whitespace().next())
        .collect();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        for name in &created {
            if !rest.starts_with(name) {
                continue;
            }
            let before = out.chars().next_back();
            let after = rest[name.len()..].chars().next();
            if !before.is_some_and(word) && !after.is_some_and(word) {
                out.push_str(&format!("{name}__{report}"));
                rest = &rest[name.len()..];
                continue 'scan;
            }
        }
        let c = rest.chars().next().expect("rest is not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A what-if's rules (`speedup` of the critical path reports): `PATTERN=FACTOR`, `;` between
/// rules, each factor a number from 0; otherwise a usage error that shows the form.
fn check_speedup(value: &str) -> Result<()> {
    for rule in value.split(';').filter(|r| !r.trim().is_empty()) {
        let factor = rule
            .split_once('=')
            .map(|(pattern, factor)| (pattern.trim(), factor.trim().parse::<f64>()));
        match factor {
            Some((pattern, Ok(f))) if !pattern.is_empty() && f.is_finite() && f >= 0.0 => {}
            _ => {
                return Err(Error::Usage(format!(
                    "speedup rule {:?} is not PATTERN=FACTOR with a factor from 0 \
                     (e.g. --param 'speedup=%gemm%=0.8;launch_overhead=0')",
                    rule.trim()
                )))
            }
        }
    }
    Ok(())
}

impl Report {
    /// The report's query for the partition columns `partitions`, with `values` (NAME, VALUE)
    /// overriding the defaults. A value is pasted into the SQL: a number, or quoted as text.
    pub fn sql(&self, partitions: &[String], values: &[(String, String)]) -> Result<String> {
        for (name, value) in values {
            if !self.params.iter().any(|p| &p.name == name) {
                let known: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "report {} has no parameter {name:?} (its parameters: {})",
                    self.name,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            if name == "speedup" {
                check_speedup(value)?;
            }
            let text = self.params.iter().any(|p| &p.name == name && p.is_text());
            if !text && value.trim().parse::<f64>().map_or(true, |v| !v.is_finite()) {
                return Err(Error::Usage(format!(
                    "parameter {name} of report {} must be a number, not {value:?}",
                    self.name
                )));
            }
        }
        let value_of = |name: &str| {
            values
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| {
                    let text = self.params.iter().any(|p| p.name == name && p.is_text());
                    if text {
                        // pasted as a SQL string literal
                        format!("'{}'", v.replace('\'', "''"))
                    } else {
                        v.trim().to_string()
                    }
                })
                .or_else(|| {
                    self.params
                        .iter()
                        .find(|p| p.name == name)
                        .map(|p| p.default.clone())
                })
        };
        let text = own_tables(&with_includes(self.object.text)?, self.name);
        crate::sql::expand_with(&text, partitions, &value_of)
    }

    /// Run the report in `ctx` (whose helpers [`register_helpers`] created) and collect it.
    pub async fn collect(
        &self,
        ctx: &SessionContext,
        partitions: &[String],
        values: &[(String, String)],
    ) -> Result<ReportOutput> {
        let df = crate::query::plan_script(ctx, &self.sql(partitions, values)?).await?;
        let schema = df.schema().inner().clone();
        let batches = df.collect().await?;
        Ok(ReportOutput {
            name: self.name.to_string(),
            title: self.title.clone(),
            partition_keys: partitions.to_vec(),
            schema,
            batches,
        })
    }
}

/// Create the helper views (`sql/reports/_*.sql`) the reports read, in `ctx`.
pub async fn register_helpers(ctx: &SessionContext, partitions: &[String]) -> Result<()> {
    let helpers = REPORTS.iter().filter(|o| o.name.starts_with('_'));
    crate::sql::create_views(ctx, helpers, partitions).await
}

/// Create the helpers that `reports` read, in `ctx`, for one run of all of them. A helper
/// that two or more of the run's queries read (reports, or helpers they read) is held
/// ([`crate::engine::HeldView`]: computed once, on its first read) when `hold_shared`; the
/// others are views. A held helper costs the memory of its rows for the run.
pub async fn register_helpers_for(
    ctx: &SessionContext,
    partitions: &[String],
    reports: &[Report],
    hold_shared: bool,
) -> Result<()> {
    let helpers: Vec<&SqlObject> = REPORTS.iter().filter(|o| o.name.starts_with('_')).collect();
    // Readers of each helper among the run's queries, walking from the reports down (helpers
    // are in dependency order, so a reader comes after what it reads).
    let mut needed: Vec<String> = reports
        .iter()
        .map(|r| Ok(code(&with_includes(r.object.text)?)))
        .collect::<Result<_>>()?;
    let mut readers = vec![0usize; helpers.len()];
    for (i, helper) in helpers.iter().enumerate().rev() {
        readers[i] = needed
            .iter()
            .filter(|text| reads(text, helper.name))
            .count();
        if readers[i] > 0 {
            needed.push(code(helper.text));
        }
    }
    for (helper, readers) in helpers.iter().zip(readers) {
        if readers == 0 {
            continue;
        }
        let text = crate::sql::expand(helper.text, partitions)?;
        let named = |e: Error| Error::Internal(format!("sql/{}: {e}", helper.path));
        if hold_shared && readers >= 2 {
            let query = view_query(&text, helper.name).ok_or_else(|| {
                named(Error::Internal("must be one CREATE OR REPLACE VIEW".into()))
            })?;
            let plan = ctx
                .sql(query)
                .await
                .map_err(|e| named(e.into()))?
                .into_unoptimized_plan();
            let held = Arc::new(crate::engine::HeldView::new(helper.name, plan));
            ctx.register_table(helper.name, held)
                .map_err(|e| named(e.into()))?;
        } else {
            ctx.sql(&text).await.map_err(|e| named(e.into()))?;
        }
    }
    Ok(())
}

/// SQL `text` without its `--` comments (which name helpers too).
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut quoted = false;
        let mut end = line.len();
        for (i, c) in line.char_indices() {
            match c {
                '\'' => quoted = !quoted,
                '-' if !quoted && line[i..].starts_with("--") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(&line[..end]);
        out.push('\n');
    }
    out
}

/// Whether the SQL `text` names `name` (as a whole word).
fn reads(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The query of a helper file `text`, `CREATE OR REPLACE VIEW name AS query`.
fn view_query<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let header = format!("CREATE OR REPLACE VIEW {name} AS");
    let (_, query) = text.split_once(&header)?;
    (!query.contains("CREATE ")).then_some(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_report_has_a_header_and_documents_its_parameters() {
        let parsed: Vec<Report> = REPORTS
            .iter()
            .filter(|o| !o.name.starts_with('_'))
            .map(|o| parse_header(o).unwrap())
            .collect();
        assert!(parsed.len() >= 15);
        for report in &parsed {
            assert!(!report.title.is_empty(), "{}", report.name);
            for param in &report.params {
                let text = param.default.len() >= 2 && param.default.ends_with('\'');
                assert!(
                    param.default.parse::<f64>().is_ok() || (param.is_text() && text),
                    "{}",
                    report.name
                );
                assert!(!param.doc.is_empty(), "{}", report.name);
                let placeholder = format!("{{{{param {}}}}}", param.name);
                assert!(
                    with_includes(report.object.text)
                        .unwrap()
                        .contains(&placeholder),
                    "{} declares {} but never uses it",
                    report.name,
                    param.name
                );
            }
        }
    }

    #[test]
    fn text_parameters_are_quoted_and_scripts_included() {
        let report = find("critical_path").unwrap();
        let values = [("annotation".to_string(), "it's %".to_string())];
        let sql = report.sql(&[], &values).unwrap();
        assert!(sql.contains("LIKE 'it''s %'"), "{sql}");
        // its stages are its own tables
        assert!(
            sql.contains("CREATE OR REPLACE TABLE _cp_path__critical_path"),
            "{sql}"
        );
        assert!(sql.contains("FROM _cp_path__critical_path p"), "{sql}");
        assert!(!sql.contains("_cp_path "), "{sql}");
        assert!(!sql.contains("{{"), "{sql}");
        // a number parameter stays a number
        let values = [("instance".to_string(), "x".to_string())];
        assert!(report.sql(&[], &values).is_err());
    }

    #[test]
    fn helpers_are_read_by_name_outside_comments() {
        let text = code("-- reads _hta_gpu_op\nSELECT '--' AS x FROM _hta_merged -- _queue_step\n");
        assert!(reads(&text, "_hta_merged"));
        assert!(!reads(&text, "_hta_gpu_op"));
        assert!(!reads(&text, "_queue_step"));
        assert!(!reads("SELECT * FROM _hta_merged_x", "_hta_merged"));
        for helper in REPORTS.iter().filter(|o| o.name.starts_with('_')) {
            let text = crate::sql::expand(helper.text, &[]).unwrap();
            assert!(view_query(&text, helper.name).is_some(), "{}", helper.name);
        }
    }

    #[test]
    fn unknown_reports_and_parameters_and_non_numbers_are_usage_errors() {
        assert!(matches!(find("nope"), Err(Error::Usage(m)) if m.contains("kernel_summary")));
        let gaps = find("gpu_gaps").unwrap();
        let set = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert!(matches!(
            gaps.sql(&[], &set("nope", "1")),
            Err(Error::Usage(_))
        ));
        assert!(matches!(
            gaps.sql(&[], &set("min_gap_ns", "1; drop")),
            Err(Error::Usage(_))
        ));
        let sql = gaps.sql(&[], &set("min_gap_ns", "250")).unwrap();
        assert!(sql.contains(">= 250"), "{sql}");
        assert!(gaps.sql(&[], &[]).unwrap().contains(">= 1000000"));
    }

    #[test]
    fn speedup_rules_are_pattern_equals_factor() {
        let report = find("critical_path_summary").unwrap();
        let set = |v: &str| vec![("speedup".to_string(), v.to_string())];
        for good in ["", "%gemm%=0.5", "gpu_compute=0; launch_overhead = 1.5;"] {
            assert!(report.sql(&[], &set(good)).is_ok(), "{good}");
        }
        for bad in ["%gemm%", "=0.5", "x=-1", "x=fast", "a=0.5;b"] {
            let err = report.sql(&[], &set(bad)).unwrap_err();
            assert!(
                matches!(&err, Error::Usage(m) if m.contains("PATTERN=FACTOR")),
                "{bad}"
            );
        }
    }
}
