//! The doctor's findings as text: a table batch (for the table sink, as `tracesql doctor`
//! and the shell's `.doctor` print it) or a JSON list for scripts. Findings come out errors
//! first, then warnings, then infos, each group in registry order.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringBuilder, UInt64Builder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::json::{writer::JsonArray, WriterBuilder};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use super::{Finding, Severity};
use crate::error::Error;
use crate::Result;

/// `findings` in the order reports show them: by severity, then registry order.
pub fn ordered(findings: &[Finding]) -> Vec<&Finding> {
    let mut out: Vec<&Finding> = findings.iter().collect();
    out.sort_by_key(|f| f.check.severity);
    out
}

/// The example row as `column=value, ...` (NULL for nulls), columns in the view's order.
pub fn example_text(example: &RecordBatch) -> Result<String> {
    let options = FormatOptions::default().with_null("NULL");
    let mut parts = Vec::with_capacity(example.num_columns());
    for (field, column) in example.schema().fields().iter().zip(example.columns()) {
        let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
        parts.push(format!("{}={}", field.name(), formatter.value(0)));
    }
    Ok(parts.join(", "))
}

/// One row per check: `check`, `severity`, `count`, `total` (`column=sum`, NULL when the
/// check sums nothing) and `example` (see [`example_text`], NULL when nothing fired).
pub fn table(findings: &[Finding]) -> Result<RecordBatch> {
    let mut check = StringBuilder::new();
    let mut severity = StringBuilder::new();
    let mut count = UInt64Builder::new();
    let mut total = StringBuilder::new();
    let mut example = StringBuilder::new();
    for f in ordered(findings) {
        check.append_value(f.check.name);
        severity.append_value(f.check.severity.as_str());
        count.append_value(f.count);
        total.append_option(
            f.check
                .total
                .map(|c| format!("{c}={}", f.total.unwrap_or(0))),
        );
        example.append_option(f.example.as_ref().map(example_text).transpose()?);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("check", DataType::Utf8, false),
        Field::new("severity", DataType::Utf8, false),
        Field::new("count", DataType::UInt64, false),
        Field::new("total", DataType::Utf8, true),
        Field::new("example", DataType::Utf8, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(check.finish()),
        Arc::new(severity.finish()),
        Arc::new(count.finish()),
        Arc::new(total.finish()),
        Arc::new(example.finish()),
    ];
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// A JSON list with one object per check: `check`, `severity` (`error`, `warning`, `info`),
/// `count`, `total` (`{"column": sum}` or null), `example` (the first row as an object, its
/// columns in the view's order, or null) and `summary` (what the check finds).
pub fn json(findings: &[Finding]) -> Result<String> {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut out = String::from("[");
    for (i, f) in ordered(findings).into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let total = match f.check.total {
            Some(c) => format!("{{{}:{}}}", quote(c), f.total.unwrap_or(0)),
            None => "null".to_string(),
        };
        let example = match &f.example {
            Some(row) => example_json(row)?,
            None => "null".to_string(),
        };
        out.push_str(&format!(
            "\n  {{\"check\":{},\"severity\":{},\"count\":{},\"total\":{total},\"example\":{example},\"summary\":{}}}",
            quote(f.check.name),
            quote(f.check.severity.as_str()),
            f.count,
            quote(f.check.summary),
        ));
    }
    out.push_str("\n]\n");
    Ok(out)
}

/// The one row of `row` as a JSON object (nulls written as null).
fn example_json(row: &RecordBatch) -> Result<String> {
    let mut buf = Vec::new();
    {
        let mut writer = WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, JsonArray>(&mut buf);
        writer.write(row)?;
        writer.finish()?;
    }
    let text = String::from_utf8(buf).map_err(|e| Error::Internal(e.to_string()))?;
    let object = text
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| Error::Internal(format!("unexpected JSON for an example: {text}")))?;
    Ok(object.to_string())
}

/// A line that sums the findings up: how many checks fired at each severity.
pub fn summary_line(findings: &[Finding]) -> String {
    let fired = |s: Severity| {
        findings
            .iter()
            .filter(|f| f.fired() && f.check.severity == s)
            .count()
    };
    format!(
        "{} checks; fired: {} error, {} warning, {} info",
        findings.len(),
        fired(Severity::Error),
        fired(Severity::Warning),
        fired(Severity::Info)
    )
}
