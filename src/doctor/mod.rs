//! Stage `doctor`: data-quality checks over a catalog. Each check is a view of `sql/doctor/`
//! that returns the offending rows, its first line a header
//! `-- @check NAME severity=error|warning|info [total=COLUMN]: what is wrong and why it matters`
//! (files starting with `_` are helpers, not checks).
//!
//! In: a catalog (`SessionContext`, its tables and views registered) and its partition
//! columns. Out: one [`Finding`] per check: how many rows fired, the first of them as the
//! example, and the sum of the `total` column if the check names one.
//!
//! The example is the first row in the order of the view's columns, left to right (DataFusion
//! drops an ORDER BY inside a view): so a check lists the partition columns first, then the
//! column that picks the most telling example (usually the start time), and the example is
//! stable whatever the plan.
//!
//! Each check is counted first (`SELECT count(*)`, which never holds the rows) and only a check
//! that fired is run again for its example (`LIMIT 1`, a top-1 sort): a clean window costs one
//! pass per check, and a window where every op is at fault still needs no memory for its rows.

pub mod report;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;

use crate::error::Error;
use crate::sql::{SqlObject, DOCTOR};
use crate::Result;

/// How bad a finding is. `Error`: answers over the window are wrong (the command exits 1);
/// `Warning`: some rows lose a link or a time; `Info`: expected, worth knowing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl std::str::FromStr for Severity {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "error" => Ok(Severity::Error),
            "warning" => Ok(Severity::Warning),
            "info" => Ok(Severity::Info),
            other => Err(format!("unknown severity `{other}`")),
        }
    }
}

/// A check: a `sql/doctor/` view and its header.
#[derive(Clone, Debug)]
pub struct Check {
    /// The view's name (the file stem).
    pub name: &'static str,
    pub severity: Severity,
    /// A column of the view whose sum the finding reports (e.g. `cut_ns`).
    pub total: Option<&'static str>,
    /// What is wrong and why it matters, one line.
    pub summary: &'static str,
}

/// What one check found.
#[derive(Clone, Debug)]
pub struct Finding {
    pub check: Check,
    /// Rows the check returned.
    pub count: u64,
    /// The sum of the check's `total` column over those rows (0 when none fired).
    pub total: Option<i64>,
    /// The first row, when some fired.
    pub example: Option<RecordBatch>,
}

impl Finding {
    pub fn fired(&self) -> bool {
        self.count > 0
    }
}

/// Whether a finding of error severity fired.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| f.fired() && f.check.severity == Severity::Error)
}

/// The checks of `sql/doctor/`, in registry order.
pub fn checks() -> Result<Vec<Check>> {
    DOCTOR
        .iter()
        .filter(|o| !o.name.starts_with('_'))
        .map(parse_header)
        .collect()
}

/// The `-- @check` header of `object`.
pub fn parse_header(object: &'static SqlObject) -> Result<Check> {
    let bad = |what: &str| Error::Internal(format!("sql/{}: {what}", object.path));
    let line = object.text.lines().next().unwrap_or_default();
    let rest = line
        .strip_prefix("-- @check ")
        .ok_or_else(|| bad("the first line must be `-- @check NAME severity=...: summary`"))?;
    let (head, summary) = rest
        .split_once(':')
        .ok_or_else(|| bad("the @check line needs `: summary`"))?;
    let mut words = head.split_whitespace();
    let name = words
        .next()
        .ok_or_else(|| bad("the @check line names no check"))?;
    if name != object.name {
        return Err(bad(&format!("@check names `{name}`, not the file's view")));
    }
    let (mut severity, mut total) = (None, None);
    for word in words {
        match word.split_once('=') {
            Some(("severity", s)) => severity = Some(s.parse::<Severity>().map_err(|e| bad(&e))?),
            Some(("total", column)) => total = Some(column),
            _ => return Err(bad(&format!("unknown @check attribute `{word}`"))),
        }
    }
    Ok(Check {
        name: object.name,
        severity: severity.ok_or_else(|| bad("the @check line needs severity=..."))?,
        total,
        summary: summary.trim(),
    })
}

/// Create the `sql/doctor/` views (checks and helpers) in `ctx`, whose tables and views are
/// registered with the partition columns `partitions`.
pub async fn register(ctx: &SessionContext, partitions: &[String]) -> Result<()> {
    crate::sql::create_views(ctx, DOCTOR.iter(), partitions).await
}

/// Register the checks in `ctx` and run every one; findings in registry order.
pub async fn run(ctx: &SessionContext, partitions: &[String]) -> Result<Vec<Finding>> {
    register(ctx, partitions).await?;
    let mut findings = Vec::new();
    for check in checks()? {
        findings.push(run_check(ctx, check).await?);
    }
    Ok(findings)
}

/// Count `check`'s rows (and sum its total column); fetch the first row if any fired.
pub async fn run_check(ctx: &SessionContext, check: Check) -> Result<Finding> {
    let name = check.name;
    let sum = check
        .total
        .map(|c| format!(", CAST(sum(\"{c}\") AS BIGINT)"))
        .unwrap_or_default();
    let batches = ctx
        .sql(&format!("SELECT count(*){sum} FROM {name}"))
        .await?
        .collect()
        .await?;
    let batch = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| Error::Internal(format!("doctor check {name}: count returned no row")))?;
    let count = batch.column(0).as_primitive::<Int64Type>().value(0) as u64;
    let total = check.total.map(|_| {
        let sums = batch.column(1).as_primitive::<Int64Type>();
        if sums.is_null(0) {
            0
        } else {
            sums.value(0)
        }
    });
    let example = match count {
        0 => None,
        _ => {
            let order = every_column(ctx, name).await?;
            crate::engine::sorting_after_unions(ctx)
                .sql(&format!("SELECT * FROM {name} ORDER BY {order} LIMIT 1"))
                .await?
                .collect()
                .await?
                .into_iter()
                .find(|b| b.num_rows() > 0)
                .map(|b| b.slice(0, 1))
        }
    };
    Ok(Finding {
        check,
        count,
        total,
        example,
    })
}

/// The columns of `view`, quoted, comma-separated, in their order.
async fn every_column(ctx: &SessionContext, view: &str) -> Result<String> {
    let table = ctx.table(view).await?;
    let columns: Vec<String> = table
        .schema()
        .fields()
        .iter()
        .map(|f| format!("\"{}\"", f.name().replace('"', "\"\"")))
        .collect();
    Ok(columns.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_header_naming_it() {
        let checks = checks().unwrap();
        let helpers = DOCTOR.iter().filter(|o| o.name.starts_with('_')).count();
        assert_eq!(checks.len() + helpers, DOCTOR.len());
        for check in &checks {
            assert!(!check.summary.is_empty(), "{}", check.name);
        }
        let overlap = checks.iter().find(|c| c.name == "stream_overlap").unwrap();
        assert_eq!(overlap.total, Some("cut_ns"));
        assert_eq!(overlap.severity, Severity::Warning);
    }

    #[test]
    fn bad_headers_name_the_file() {
        static BAD: &[SqlObject] = &[
            SqlObject {
                name: "x",
                path: "doctor/x.sql",
                text: "-- x: no header\n",
            },
            SqlObject {
                name: "x",
                path: "doctor/x.sql",
                text: "-- @check y severity=error: names another view\n",
            },
            SqlObject {
                name: "x",
                path: "doctor/x.sql",
                text: "-- @check x severity=fatal: unknown severity\n",
            },
            SqlObject {
                name: "x",
                path: "doctor/x.sql",
                text: "-- @check x: no severity\n",
            },
        ];
        for object in BAD {
            let e = parse_header(object).unwrap_err().to_string();
            assert!(e.contains("sql/doctor/x.sql"), "{e}");
        }
    }

    #[test]
    fn severities_order_errors_first() {
        assert!(Severity::Error < Severity::Warning && Severity::Warning < Severity::Info);
        for s in [Severity::Error, Severity::Warning, Severity::Info] {
            assert_eq!(s.as_str().parse::<Severity>().unwrap(), s);
        }
    }
}
