//! The `cpu_event` table's source: parse a Kineto CPU trace (`cpu_trace.json[.gz]`) into one
//! RecordBatch. Timestamps are exact: Kineto writes microseconds as decimal text, which is
//! turned into integer nanoseconds digit by digit, never through f64.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Builder, StringViewBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::Error;
use crate::Result;

/// Columns of `cpu_event`, before any archive partition columns.
pub fn cpu_event_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        // position of the event in the trace's traceEvents list
        Field::new("event_index", DataType::Int64, false),
        Field::new("ph", DataType::Utf8View, true),
        Field::new("cat", DataType::Utf8View, true),
        Field::new("name", DataType::Utf8View, true),
        // text: Kineto writes numbers and strings ("Spans", "") for ids
        Field::new("pid", DataType::Utf8View, true),
        Field::new("tid", DataType::Utf8View, true),
        Field::new("ts_ns", DataType::Int64, true),
        Field::new("dur_ns", DataType::Int64, true),
        Field::new("external_id", DataType::Int64, true),
        // the event's args object as JSON text
        Field::new("args", DataType::Utf8View, true),
    ]))
}

#[derive(Deserialize)]
struct TraceDoc<'a> {
    #[serde(rename = "baseTimeNanoseconds", borrow, default)]
    base_ns: Option<&'a RawValue>,
    #[serde(rename = "traceEvents", borrow)]
    events: Option<Vec<Event<'a>>>,
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tid: Option<&'a RawValue>,
    #[serde(borrow, default)]
    ts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a RawValue>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ArgIds<'a> {
    #[serde(rename = "External id", borrow, default)]
    external_id: Option<&'a RawValue>,
    // the spelling of older Kineto versions
    #[serde(rename = "external id", borrow, default)]
    external_id_legacy: Option<&'a RawValue>,
}

/// Parse the CPU trace at `path` into a `cpu_event` batch.
pub fn parse_cpu_trace(path: &Path) -> Result<RecordBatch> {
    parse_cpu_trace_bytes(&crate::file::read_gunzipped(path)?, path)
}

/// Parse a CPU trace already read (`bytes`, decompressed; `path` names it in errors) into a
/// `cpu_event` batch.
pub fn parse_cpu_trace_bytes(bytes: &[u8], path: &Path) -> Result<RecordBatch> {
    let bad = |reason: String| Error::BadCpuTrace {
        file: path.to_path_buf(),
        reason,
    };
    let doc: TraceDoc = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let base_ns = match doc.base_ns {
        Some(raw) => parse_int(raw.get()).ok_or_else(|| {
            bad(format!(
                "baseTimeNanoseconds {} is not an integer",
                raw.get()
            ))
        })?,
        None => 0,
    };
    let events = doc
        .events
        .ok_or_else(|| bad("no traceEvents list".to_string()))?;
    let n = events.len();
    let mut index = Int64Builder::with_capacity(n);
    let mut ph = StringViewBuilder::with_capacity(n);
    let mut cat = StringViewBuilder::with_capacity(n);
    let mut name = StringViewBuilder::with_capacity(n);
    let mut pid = StringViewBuilder::with_capacity(n);
    let mut tid = StringViewBuilder::with_capacity(n);
    let mut ts = Int64Builder::with_capacity(n);
    let mut dur = Int64Builder::with_capacity(n);
    let mut ext = Int64Builder::with_capacity(n);
    let mut args = StringViewBuilder::with_capacity(n);
    for (i, ev) in events.iter().enumerate() {
        index.append_value(i as i64);
        ph.append_option(ev.ph.as_deref());
        cat.append_option(ev.cat.as_deref());
        name.append_option(ev.name.as_deref());
        pid.append_option(ev.pid.map(id_text).as_deref());
        tid.append_option(ev.tid.map(id_text).as_deref());
        ts.append_option(
            ev.ts
                .and_then(|r| micros_text_to_ns(r.get()))
                .map(|t| t + base_ns),
        );
        dur.append_option(ev.dur.and_then(|r| micros_text_to_ns(r.get())));
        let ids = ev
            .args
            .and_then(|a| serde_json::from_str::<ArgIds>(a.get()).ok());
        let external = ids
            .and_then(|ids| ids.external_id.or(ids.external_id_legacy))
            .and_then(|r| parse_int(r.get()));
        ext.append_option(external);
        args.append_option(ev.args.map(|a| a.get()));
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(index.finish()),
        Arc::new(ph.finish()),
        Arc::new(cat.finish()),
        Arc::new(name.finish()),
        Arc::new(pid.finish()),
        Arc::new(tid.finish()),
        Arc::new(ts.finish()),
        Arc::new(dur.finish()),
        Arc::new(ext.finish()),
        Arc::new(args.finish()),
    ];
    RecordBatch::try_new(cpu_event_schema(), columns).map_err(|e| Error::Internal(e.to_string()))
}

/// An id as text: a JSON string's contents, or a number's digits as written.
fn id_text(raw: &RawValue) -> Cow<'_, str> {
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text)
            .map(Cow::Owned)
            .unwrap_or(Cow::Borrowed(text))
    } else {
        Cow::Borrowed(text)
    }
}

/// An integer from JSON text: `12`, `"12"` or `12.0`.
pub fn parse_int(text: &str) -> Option<i64> {
    let t = text.trim_matches('"');
    t.parse::<i64>().ok().or_else(|| {
        let ns = micros_text_to_ns(t)?;
        (ns % 1000 == 0).then_some(ns / 1000)
    })
}

/// Microseconds written as decimal text (`4999991.125`, `-3`, `"12.5"`, `1.5e3`) to integer
/// nanoseconds. Digits past the nanosecond are rounded half away from zero.
pub fn micros_text_to_ns(text: &str) -> Option<i64> {
    if let Some(ns) = plain_micros_to_ns(text.as_bytes()) {
        return Some(ns);
    }
    let t = text.trim_matches('"').trim();
    if t.contains(['e', 'E']) {
        // Exponent forms are rare (Python's json writes them only for huge or tiny values).
        let v: f64 = t.parse().ok()?;
        return v.is_finite().then(|| (v * 1000.0).round() as i64);
    }
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().ok()?
    };
    let frac = frac_part.as_bytes();
    let mut sub_us: i64 = 0;
    for k in 0..3 {
        sub_us = sub_us * 10 + frac.get(k).map_or(0, |b| i64::from(b - b'0'));
    }
    if frac.get(3).is_some_and(|b| *b >= b'5') {
        sub_us += 1;
    }
    let ns = whole.checked_mul(1000)?.checked_add(sub_us)?;
    Some(if negative { -ns } else { ns })
}

/// The common form, `-?digits(.digits)?`, in one pass over the bytes (hot: two calls per
/// imported event). None for anything else, which the general parser then reads.
fn plain_micros_to_ns(t: &[u8]) -> Option<i64> {
    let (negative, t) = match t.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, t),
    };
    let dot = t.iter().position(|b| *b == b'.').unwrap_or(t.len());
    let (int_part, frac) = (&t[..dot], t.get(dot + 1..).unwrap_or_default());
    if int_part.is_empty() {
        return None;
    }
    let mut ns: i64 = 0;
    for b in int_part {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        ns = ns.checked_mul(10)?.checked_add(i64::from(digit))?;
    }
    if !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut sub_us: i64 = 0;
    for k in 0..3 {
        sub_us = sub_us * 10 + frac.get(k).map_or(0, |b| i64::from(b - b'0'));
    }
    if frac.get(3).is_some_and(|b| *b >= b'5') {
        sub_us += 1;
    }
    let ns = ns.checked_mul(1000)?.checked_add(sub_us)?;
    Some(if negative { -ns } else { ns })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Array;

    #[test]
    fn micros_text_is_exact_to_the_nanosecond() {
        assert_eq!(micros_text_to_ns("4999991.125"), Some(4_999_991_125));
        assert_eq!(
            micros_text_to_ns("1759300079000010.123"),
            Some(1_759_300_079_000_010_123)
        );
        assert_eq!(micros_text_to_ns("12"), Some(12_000));
        assert_eq!(micros_text_to_ns("-0.5"), Some(-500));
        assert_eq!(micros_text_to_ns("0.0004"), Some(0));
        assert_eq!(micros_text_to_ns("0.0005"), Some(1));
        assert_eq!(micros_text_to_ns("\"7.25\""), Some(7_250));
        assert_eq!(micros_text_to_ns("1.5e3"), Some(1_500_000));
        assert_eq!(micros_text_to_ns("abc"), None);
        assert_eq!(micros_text_to_ns(""), None);
        assert_eq!(micros_text_to_ns("-"), None);
        assert_eq!(micros_text_to_ns("5."), Some(5_000));
        assert_eq!(micros_text_to_ns(".5"), Some(500));
        assert_eq!(micros_text_to_ns("1.2.3"), None);
        assert_eq!(micros_text_to_ns("99999999999999999999"), None);
    }

    #[test]
    fn parses_ids_as_text_and_external_ids_in_both_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(
            &path,
            r#"{"baseTimeNanoseconds": 1000000, "traceEvents": [
              {"ph":"X","cat":"cpu_op","name":"a","pid":12,"tid":"Spans","ts":1.5,"dur":2,"args":{"External id":7}},
              {"ph":"X","cat":"Operator","name":"b","pid":"x","tid":3,"ts":2,"args":{"external id":8}},
              {"ph":"M","name":"process_name","pid":12,"args":{"name":"python"}}]}"#,
        )
        .unwrap();
        let batch = parse_cpu_trace(&path).unwrap();
        assert_eq!(batch.num_rows(), 3);
        let ts = batch
            .column(6)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .unwrap();
        assert_eq!(ts.value(0), 1_001_500);
        let ext = batch
            .column(8)
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .unwrap();
        assert_eq!((ext.value(0), ext.value(1), ext.is_null(2)), (7, 8, true));
    }

    #[test]
    fn a_trace_without_events_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, r#"{"traceName": "x"}"#).unwrap();
        let err = parse_cpu_trace(&path).unwrap_err().to_string();
        assert!(
            err.contains("bad.json") && err.contains("traceEvents"),
            "{err}"
        );
    }
}
