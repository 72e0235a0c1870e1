//! The `cpu_event` table's source, and the one reader of a Kineto CPU trace
//! (`cpu_trace.json[.gz]`): the document is split once ([`TraceDoc`]: its top-level members,
//! its events as raw JSON text), then its events become one RecordBatch, read in stretches
//! side by side, each event's own text kept as `raw` (what the exports copy). Timestamps are
//! exact: Kineto writes microseconds as decimal text, which is turned into integer
//! nanoseconds digit by digit, never through f64.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, Int64Array, Int64Builder, StringViewArray, StringViewBuilder,
};
use datafusion::arrow::buffer::Buffer;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use serde::Deserialize;
use serde_json::value::RawValue;

pub use super::trace_doc::TraceDoc;
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
        // the whole event as written in the trace
        Field::new("raw", DataType::Utf8View, false),
    ]))
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
    Ok(parse_cpu_trace_with_base(path)?.0)
}

/// [`parse_cpu_trace`], with the trace's `baseTimeNanoseconds` (None when it has none).
pub fn parse_cpu_trace_with_base(path: &Path) -> Result<(RecordBatch, Option<i64>)> {
    let text = Buffer::from_vec(crate::file::read_gunzipped(path)?);
    parse_cpu_trace_text_with_base(&text, path)
}

/// Parse a CPU trace already read (`text`, decompressed; `path` names it in errors) into a
/// `cpu_event` batch. Its text columns are views into `text` wherever a value is written
/// without escapes, so the batch keeps `text` alive rather than copying it: the args of a
/// large trace are most of its bytes.
pub fn parse_cpu_trace_text(text: &Buffer, path: &Path) -> Result<RecordBatch> {
    Ok(parse_cpu_trace_text_with_base(text, path)?.0)
}

/// [`parse_cpu_trace_text`], with the trace's `baseTimeNanoseconds` (None when it has none).
pub fn parse_cpu_trace_text_with_base(
    text: &Buffer,
    path: &Path,
) -> Result<(RecordBatch, Option<i64>)> {
    let (doc, events) = read_cpu_trace(text, path)?;
    Ok((concat_batches(&cpu_event_schema(), &events)?, doc.base()))
}

/// The CPU trace in `text` (decompressed; `path` names it in errors), read once: its
/// document (top-level members, base time) and its `cpu_event` rows in trace order, one
/// batch per stretch read (never concatenated: that would hold every view twice, 10 M
/// .json.gz peak 0.94 -> 1.15 GB), whose text columns (`raw` among them) are views into
/// `text`.
pub fn read_cpu_trace<'a>(
    text: &'a Buffer,
    path: &'a Path,
) -> Result<(TraceDoc<'a>, Vec<RecordBatch>)> {
    let (doc, events) = TraceDoc::parse(text.as_slice(), path)?;
    let base_ns = doc.base().unwrap_or(0);
    // Reading the events' members is most of the time: one stretch per core.
    let cores = crate::threads::cores();
    let per = events.len().div_ceil(cores).max(1);
    let doc_ref = &doc;
    let batches: Vec<Result<RecordBatch>> = std::thread::scope(|scope| {
        let running: Vec<_> = (events.chunks(per).enumerate())
            .map(|(k, stretch)| {
                scope.spawn(move || {
                    let mut columns = Columns::new(text, (k * per) as i64);
                    for raw in stretch {
                        let event = serde_json::from_str::<Event>(raw.get()).map_err(|e| {
                            doc_ref.bad(format!("event {}: {e}", columns.next_index()))
                        })?;
                        columns.push(&event, raw.get());
                    }
                    columns.finish(base_ns)
                })
            })
            .collect();
        running
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let batches = batches.into_iter().collect::<Result<Vec<_>>>()?;
    Ok((doc, batches))
}

/// The builders of `cpu_event`'s columns, with `text` added as a data block to each text
/// column so that values borrowed from it are appended as views.
struct Columns<'b> {
    text: &'b Buffer,
    /// the place in traceEvents of the first event pushed
    first_index: i64,
    index: Int64Builder,
    ph: TextColumn,
    cat: TextColumn,
    name: TextColumn,
    pid: TextColumn,
    tid: TextColumn,
    ts: Int64Builder,
    dur: Int64Builder,
    ext: Int64Builder,
    args: TextColumn,
    raw: TextColumn,
}

impl<'b> Columns<'b> {
    fn new(text: &'b Buffer, first_index: i64) -> Self {
        Columns {
            text,
            first_index,
            index: Int64Builder::new(),
            ph: TextColumn::new(text),
            cat: TextColumn::new(text),
            name: TextColumn::new(text),
            pid: TextColumn::new(text),
            tid: TextColumn::new(text),
            ts: Int64Builder::new(),
            dur: Int64Builder::new(),
            ext: Int64Builder::new(),
            args: TextColumn::new(text),
            raw: TextColumn::new(text),
        }
    }

    /// The place in traceEvents of the next event pushed.
    fn next_index(&self) -> i64 {
        self.first_index + self.index.len() as i64
    }

    /// Append `ev`, read from `raw` (a slice of the text).
    fn push(&mut self, ev: &Event, raw: &str) {
        let text = self.text.as_slice();
        self.index.append_value(self.next_index());
        self.ph.append(text, ev.ph.as_deref());
        self.cat.append(text, ev.cat.as_deref());
        self.name.append(text, ev.name.as_deref());
        self.pid.append(text, ev.pid.map(id_text).as_deref());
        self.tid.append(text, ev.tid.map(id_text).as_deref());
        self.ts
            .append_option(ev.ts.and_then(|r| micros_text_to_ns(r.get())));
        self.dur
            .append_option(ev.dur.and_then(|r| micros_text_to_ns(r.get())));
        let ids = ev
            .args
            .and_then(|a| serde_json::from_str::<ArgIds>(a.get()).ok());
        let external = ids
            .and_then(|ids| ids.external_id.or(ids.external_id_legacy))
            .and_then(|r| parse_int(r.get()));
        self.ext.append_option(external);
        self.args.append(text, ev.args.map(|a| a.get()));
        self.raw.append(text, Some(raw));
    }

    /// The batch, with `base_ns` (known only once the whole trace is read) added to `ts_ns`.
    fn finish(mut self, base_ns: i64) -> Result<RecordBatch> {
        let ts: Int64Array = self.ts.finish().unary(|t: i64| t.wrapping_add(base_ns));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.index.finish()),
            Arc::new(self.ph.finish()),
            Arc::new(self.cat.finish()),
            Arc::new(self.name.finish()),
            Arc::new(self.pid.finish()),
            Arc::new(self.tid.finish()),
            Arc::new(ts),
            Arc::new(self.dur.finish()),
            Arc::new(self.ext.finish()),
            Arc::new(self.args.finish()),
            Arc::new(self.raw.finish()),
        ];
        RecordBatch::try_new(cpu_event_schema(), columns)
            .map_err(|e| Error::Internal(e.to_string()))
    }
}

/// A Utf8View column whose values are views into the trace text where they can be: the text
/// is added as overlapping blocks (a view's offset is 32 bits), block k covering
/// `[k * step, (k + 2) * step)`, so any value up to `step` bytes long lies whole in one
/// block. A longer value, or one that is not a slice of the text (an unescaped string), is
/// copied.
struct TextColumn {
    builder: StringViewBuilder,
    /// the block id of block k
    blocks: Vec<u32>,
    step: usize,
}

impl TextColumn {
    /// 1 GiB steps: blocks of up to 2 GiB, under the 4 GiB a view can address.
    fn new(text: &Buffer) -> Self {
        TextColumn::with_step(text, 1 << 30)
    }

    fn with_step(text: &Buffer, step: usize) -> Self {
        let mut builder = StringViewBuilder::new();
        let blocks = (0..text.len().div_ceil(step).max(1))
            .map(|k| {
                let start = (k * step).min(text.len());
                let len = (2 * step).min(text.len() - start);
                builder.append_block(text.slice_with_length(start, len))
            })
            .collect();
        TextColumn {
            builder,
            blocks,
            step,
        }
    }

    /// Append `value`, a view when it is a slice of `text` (the text the blocks were made of).
    fn append(&mut self, text: &[u8], value: Option<&str>) {
        let Some(value) = value else {
            self.builder.append_null();
            return;
        };
        let offset = (value.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        let within = offset <= text.len() && value.len() <= text.len() - offset;
        if within && value.len() <= self.step {
            let k = offset / self.step;
            // SAFETY: block k is text[k * step..] (up to 2 * step bytes), which holds `value`
            // whole, as checked above; `value` is a &str, so the viewed bytes are UTF-8.
            unsafe {
                self.builder.append_view_unchecked(
                    self.blocks[k],
                    (offset - k * self.step) as u32,
                    value.len() as u32,
                )
            };
        } else {
            self.builder.append_value(value);
        }
    }

    fn finish(&mut self) -> StringViewArray {
        self.builder.finish()
    }
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
    fn text_values_are_views_into_the_trace_or_copies() {
        let text = Buffer::from_vec(
            br#"{"traceEvents":[{"name":"a\"b","args":{"k":"a long value"}}]}"#.to_vec(),
        );
        let batch = parse_cpu_trace_text(&text, Path::new("t.json")).unwrap();
        let text_at = |column: usize| {
            let array = batch
                .column(column)
                .as_any()
                .downcast_ref::<StringViewArray>()
                .unwrap();
            array.value(0).to_string()
        };
        assert_eq!(text_at(3), "a\"b", "an escaped name is decoded");
        assert_eq!(
            text_at(9),
            r#"{"k":"a long value"}"#,
            "args are the text as written"
        );

        // Small steps: values straddle blocks, and some are longer than a step.
        let bytes = Buffer::from_vec(b"0123456789abcdefghijklmnopqrstuvwxyz".to_vec());
        let source = std::str::from_utf8(bytes.as_slice()).unwrap();
        let mut column = TextColumn::with_step(&bytes, 4);
        let values = [
            &source[0..3],
            &source[3..8],
            &source[7..20],
            &source[30..36],
            "copied",
        ];
        for value in values {
            column.append(bytes.as_slice(), Some(value));
        }
        column.append(bytes.as_slice(), None);
        let array = column.finish();
        for (i, value) in values.iter().enumerate() {
            assert_eq!(array.value(i), *value);
        }
        assert!(array.is_null(values.len()));
    }

    #[test]
    fn the_base_is_returned_when_the_trace_has_one() {
        let text = |t: &str| Buffer::from_vec(t.as_bytes().to_vec());
        let with = text(r#"{"baseTimeNanoseconds": 5000, "traceEvents": [{"ts": 1}]}"#);
        let (batch, base) = parse_cpu_trace_text_with_base(&with, Path::new("t")).unwrap();
        assert_eq!(base, Some(5000));
        let ts = batch
            .column(6)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(ts.value(0), 6000);
        let without = text(r#"{"traceEvents": [{"ts": 1}]}"#);
        let (_, base) = parse_cpu_trace_text_with_base(&without, Path::new("t")).unwrap();
        assert_eq!(base, None);
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
