//! Stage `sink`: the Chrome trace JSON writer. It frames the document (the CPU trace's
//! top-level members around one `traceEvents` list) and encodes events straight from Arrow
//! arrays; what the events are is decided upstream, in `sql/export/`.
//!
//! A batch's column names are the JSON keys of its events:
//! - `k`: a top-level member; `args.k`: a member of the event's `args` object;
//! - a `::json` suffix: the value is JSON text, written verbatim;
//! - `args.*...`: JSON object members (text without braces) spliced into `args`;
//! - NULL leaves the member out; `args` is written when any of its columns is non-null.
//!
//! Numbers are written as Python's `json` writes them (the reference is Python): integers
//! as integers, floats as their shortest round-trip repr (`5000004.5`, `1.0`, `1e-05`).
//!
//! The writer also notes the extent of the duration (`X`) events it writes outside the
//! `Trace` category ([`ChromeWriter::span`]): the profiler span the document ends with
//! covers them, and measuring it here spares a second pass over every plan.

use std::io::Write;

use datafusion::arrow::array::{
    Array, AsArray, BooleanArray, Float64Array, Int32Array, Int64Array, LargeStringArray,
    StringArray, StringViewArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type, UInt64Type};
use datafusion::arrow::record_batch::RecordBatch;

use crate::error::Error;
use crate::Result;

use super::json_text::write_int;
pub use super::json_text::{write_py_float, write_str};

const FLUSH_AT: usize = 1 << 20;

/// A streaming Chrome trace writer: `try_new` writes the document's head up to the opening
/// of `traceEvents`, events follow (raw JSON text or Arrow batches), `finish` writes the
/// rest of the document.
pub struct ChromeWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    events: u64,
    span: Option<Span>,
}

/// The extent of duration events, in their own unit (µs), as the reference measures it:
/// Python's `min` / `max` over floats, the end clamped at 0 and a negative `dur` at 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// the least `ts`
    pub min_ts: f64,
    /// the greatest `ts + max(dur, 0)`, at least 0
    pub max_end: f64,
}

impl Span {
    /// The extent of both.
    pub fn merge(a: Option<Span>, b: Option<Span>) -> Option<Span> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Span {
                min_ts: if b.min_ts < a.min_ts {
                    b.min_ts
                } else {
                    a.min_ts
                },
                max_end: if b.max_end > a.max_end {
                    b.max_end
                } else {
                    a.max_end
                },
            }),
            (a, b) => a.or(b),
        }
    }

    fn cover(span: &mut Option<Span>, ts: f64, dur: f64) {
        // Python's min(a, b) keeps a unless b < a; max(a, b) keeps a unless b > a.
        let dur = if 0.0 > dur { 0.0 } else { dur };
        let end = ts + dur;
        let s = span.get_or_insert(Span {
            min_ts: f64::INFINITY,
            max_end: 0.0,
        });
        if ts < s.min_ts {
            s.min_ts = ts;
        }
        if end > s.max_end {
            s.max_end = end;
        }
    }
}

impl<W: Write> ChromeWriter<W> {
    /// Start a document whose members before `traceEvents` are `head`: (key, JSON text).
    pub fn try_new(out: W, head: &[(&str, &str)]) -> Result<Self> {
        let mut w = Self::segment(out);
        w.buf.extend_from_slice(&document_head(head));
        Ok(w)
    }

    /// A writer of bare events, comma-separated, for a stretch of `traceEvents` encoded on
    /// its own (the export joins such stretches into one document).
    pub fn segment(out: W) -> Self {
        ChromeWriter {
            out,
            buf: Vec::with_capacity(FLUSH_AT + (64 << 10)),
            events: 0,
            span: None,
        }
    }

    /// Flush a [`ChromeWriter::segment`] and return the underlying writer.
    pub fn finish_segment(mut self) -> Result<W> {
        self.flush_buf()?;
        self.out.flush().map_err(io_error)?;
        Ok(self.out)
    }

    /// Events written so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The extent of the duration events outside the `Trace` category written so far
    /// (raw ones as told through [`ChromeWriter::cover`]); None before the first.
    pub fn span(&self) -> Option<Span> {
        self.span
    }

    /// Copy one event given as JSON text.
    pub fn write_raw(&mut self, event: &str) -> Result<()> {
        self.separator();
        self.buf.extend_from_slice(event.as_bytes());
        self.maybe_flush()
    }

    /// Count a duration event written raw (`ts`, `dur` as the reference reads them) towards
    /// [`ChromeWriter::span`]: the writer does not parse raw text.
    pub fn cover(&mut self, ts: f64, dur: f64) {
        Span::cover(&mut self.span, ts, dur);
    }

    /// Encode every row of `batch` as one event (see the module docs for the column names).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let schema = batch.schema();
        let mut top: Vec<(Key, Column<'_>)> = Vec::new();
        let mut args: Vec<(Member, Column<'_>)> = Vec::new();
        let mut args_at = None;
        for (field, array) in schema.fields().iter().zip(batch.columns()) {
            let name = field.name().as_str();
            let (name, raw) = match name.strip_suffix("::json") {
                Some(n) => (n, true),
                None => (name, false),
            };
            let column = Column::new(array.as_ref(), raw, name)?;
            match name.strip_prefix("args.") {
                Some(key) => {
                    args_at.get_or_insert(top.len());
                    let member = match key.strip_prefix('*') {
                        Some(_) => Member::Splice,
                        None => Member::Key(Key::new(key)),
                    };
                    args.push((member, column));
                }
                None => top.push((Key::new(name), column)),
            }
        }
        let args_key = Key::new("args");
        let extent = Extent::find(&top);
        for row in 0..batch.num_rows() {
            self.separator();
            let buf = &mut self.buf;
            buf.push(b'{');
            let mut first = true;
            for (i, (key, column)) in top.iter().enumerate() {
                if args_at == Some(i) {
                    write_args(buf, &args_key, &args, row, &mut first);
                }
                if column.is_null(row) {
                    continue;
                }
                key.write(buf, &mut first);
                column.write(buf, row);
            }
            if args_at == Some(top.len()) {
                write_args(buf, &args_key, &args, row, &mut first);
            }
            buf.push(b'}');
            if let Some(extent) = &extent {
                if extent.counts(row) {
                    Span::cover(&mut self.span, extent.ts.at(row), extent.dur.at(row));
                }
            }
            self.maybe_flush()?;
        }
        Ok(())
    }

    /// Close `traceEvents`, write the members after it (`tail`: key, JSON text) and flush.
    /// Returns the underlying writer.
    pub fn finish(mut self, tail: &[(&str, &str)]) -> Result<W> {
        self.buf.extend_from_slice(&document_tail(tail));
        self.finish_segment()
    }

    fn separator(&mut self) {
        if self.events > 0 {
            self.buf.push(b',');
        }
        self.events += 1;
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.out.write_all(&self.buf).map_err(io_error)?;
        self.buf.clear();
        Ok(())
    }
}

/// The document up to the opening of `traceEvents`: `{`, the `head` members (key, JSON
/// text), `"traceEvents":[`.
pub fn document_head(head: &[(&str, &str)]) -> Vec<u8> {
    let mut buf = vec![b'{'];
    for (key, value) in head {
        write_str(&mut buf, key);
        buf.push(b':');
        buf.extend_from_slice(value.as_bytes());
        buf.push(b',');
    }
    buf.extend_from_slice(b"\"traceEvents\":[");
    buf
}

/// The document after the last event: `]`, the `tail` members, `}`.
pub fn document_tail(tail: &[(&str, &str)]) -> Vec<u8> {
    let mut buf = vec![b']'];
    for (key, value) in tail {
        buf.push(b',');
        write_str(&mut buf, key);
        buf.push(b':');
        buf.extend_from_slice(value.as_bytes());
    }
    buf.push(b'}');
    buf
}

fn io_error(e: std::io::Error) -> Error {
    Error::Write(e)
}

/// The columns of a batch the profiler span reads: `ph`, `cat`, `ts`, `dur`.
struct Extent<'c, 'a> {
    ph: &'c Column<'a>,
    cat: Option<&'c Column<'a>>,
    ts: Number<'c, 'a>,
    dur: Number<'c, 'a>,
}

/// A column read as the reference's `_as_float(event.get(key, 0.0))`: 0.0 when absent.
struct Number<'c, 'a>(Option<&'c Column<'a>>);

impl<'c, 'a> Extent<'c, 'a> {
    /// None for a batch without a `ph` column: none of its events is a duration event.
    fn find(top: &'c [(Key, Column<'a>)]) -> Option<Self> {
        let get = |key: &str| top.iter().find(|(k, _)| k.name == key).map(|(_, c)| c);
        Some(Extent {
            ph: get("ph")?,
            cat: get("cat"),
            ts: Number(get("ts")),
            dur: Number(get("dur")),
        })
    }

    /// Whether the row is a duration event outside the `Trace` category.
    fn counts(&self, row: usize) -> bool {
        let text = |c: &Column<'a>| (!c.is_null(row)).then(|| c.text(row));
        text(self.ph) == Some("X") && self.cat.and_then(text) != Some("Trace")
    }
}

impl Number<'_, '_> {
    fn at(&self, row: usize) -> f64 {
        match self.0 {
            Some(c) if !c.is_null(row) => c.number(row),
            _ => 0.0,
        }
    }
}

enum Member {
    Key(Key),
    Splice,
}

/// A member's key, with its JSON text (`"key":`) encoded once per batch.
struct Key {
    name: String,
    json: Vec<u8>,
}

impl Key {
    fn new(name: &str) -> Key {
        let mut json = Vec::with_capacity(name.len() + 3);
        write_str(&mut json, name);
        json.push(b':');
        Key {
            name: name.to_string(),
            json,
        }
    }

    /// `"key":`, after a comma unless it is the object's `first` member.
    fn write(&self, buf: &mut Vec<u8>, first: &mut bool) {
        if !*first {
            buf.push(b',');
        }
        *first = false;
        buf.extend_from_slice(&self.json);
    }
}

fn write_args(
    buf: &mut Vec<u8>,
    args_key: &Key,
    args: &[(Member, Column<'_>)],
    row: usize,
    first: &mut bool,
) {
    if args.iter().all(|(_, c)| c.is_null(row)) {
        return;
    }
    args_key.write(buf, first);
    buf.push(b'{');
    let mut first_arg = true;
    for (member, column) in args {
        if column.is_null(row) {
            continue;
        }
        match member {
            Member::Key(key) => {
                key.write(buf, &mut first_arg);
                column.write(buf, row);
            }
            Member::Splice => {
                let text = column.text(row).trim();
                if !text.is_empty() {
                    if !first_arg {
                        buf.push(b',');
                    }
                    first_arg = false;
                    buf.extend_from_slice(text.as_bytes());
                }
            }
        }
    }
    buf.push(b'}');
}

/// One column of a batch, downcast once.
enum Column<'a> {
    I64(&'a Int64Array),
    I32(&'a Int32Array),
    U64(&'a UInt64Array),
    F64(&'a Float64Array),
    Bool(&'a BooleanArray),
    Str(Text<'a>, bool),
    Null,
}

enum Text<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Column<'a> {
    fn new(array: &'a dyn Array, raw: bool, name: &str) -> Result<Self> {
        Ok(match array.data_type() {
            DataType::Int64 => Column::I64(array.as_primitive::<Int64Type>()),
            DataType::Int32 => Column::I32(array.as_primitive::<Int32Type>()),
            DataType::UInt64 => Column::U64(array.as_primitive::<UInt64Type>()),
            DataType::Float64 => Column::F64(array.as_primitive::<Float64Type>()),
            DataType::Boolean => Column::Bool(array.as_boolean()),
            DataType::Utf8 => Column::Str(Text::Utf8(array.as_string::<i32>()), raw),
            DataType::LargeUtf8 => Column::Str(Text::Large(array.as_string::<i64>()), raw),
            DataType::Utf8View => Column::Str(Text::View(array.as_string_view()), raw),
            DataType::Null => Column::Null,
            other => {
                return Err(Error::Internal(format!(
                    "chrome sink: column `{name}` has type {other}, which it cannot encode"
                )))
            }
        })
    }

    fn is_null(&self, row: usize) -> bool {
        match self {
            Column::I64(a) => a.is_null(row),
            Column::I32(a) => a.is_null(row),
            Column::U64(a) => a.is_null(row),
            Column::F64(a) => a.is_null(row),
            Column::Bool(a) => a.is_null(row),
            Column::Str(Text::Utf8(a), _) => a.is_null(row),
            Column::Str(Text::Large(a), _) => a.is_null(row),
            Column::Str(Text::View(a), _) => a.is_null(row),
            Column::Null => true,
        }
    }

    fn text(&self, row: usize) -> &'a str {
        match self {
            Column::Str(Text::Utf8(a), _) => a.value(row),
            Column::Str(Text::Large(a), _) => a.value(row),
            Column::Str(Text::View(a), _) => a.value(row),
            _ => "",
        }
    }

    /// The value as Python's `float()` reads it, 0.0 where it fails.
    fn number(&self, row: usize) -> f64 {
        match self {
            Column::I64(a) => a.value(row) as f64,
            Column::I32(a) => a.value(row) as f64,
            Column::U64(a) => a.value(row) as f64,
            Column::F64(a) => a.value(row),
            Column::Bool(a) => f64::from(u8::from(a.value(row))),
            Column::Str(..) => self.text(row).trim().parse().unwrap_or(0.0),
            Column::Null => 0.0,
        }
    }

    fn write(&self, buf: &mut Vec<u8>, row: usize) {
        match self {
            Column::I64(a) => write_int(buf, a.value(row)),
            Column::I32(a) => write_int(buf, a.value(row) as i64),
            Column::U64(a) => match i64::try_from(a.value(row)) {
                Ok(v) => write_int(buf, v),
                Err(_) => buf.extend_from_slice(a.value(row).to_string().as_bytes()),
            },
            Column::F64(a) => write_py_float(buf, a.value(row)),
            Column::Bool(a) => buf.extend_from_slice(if a.value(row) { b"true" } else { b"false" }),
            Column::Str(_, true) => buf.extend_from_slice(self.text(row).as_bytes()),
            Column::Str(_, false) => write_str(buf, self.text(row)),
            Column::Null => buf.extend_from_slice(b"null"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_span_covers_duration_events_outside_the_trace_category() {
        use std::sync::Arc;

        use datafusion::arrow::array::ArrayRef;

        let ph: ArrayRef = Arc::new(StringArray::from(vec!["X", "X", "i", "X", "X"]));
        let cat: ArrayRef = Arc::new(StringArray::from(vec![
            Some("kernel"),
            Some("Trace"),
            None,
            None,
            Some("kernel"),
        ]));
        let ts: ArrayRef = Arc::new(Float64Array::from(vec![10.5, 1.0, 2.0, 30.0, 20.0]));
        let dur: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.25),
            Some(100.0),
            None,
            Some(-5.0),
            None,
        ]));
        let batch =
            RecordBatch::try_from_iter([("ph", ph), ("cat", cat), ("ts", ts), ("dur", dur)])
                .unwrap();
        let mut w = ChromeWriter::try_new(Vec::new(), &[]).unwrap();
        assert_eq!(w.span(), None);
        w.write(&batch).unwrap();
        // the Trace span and the instant are skipped; a negative or absent dur counts as 0
        assert_eq!(
            w.span(),
            Some(Span {
                min_ts: 10.5,
                max_end: 30.0
            })
        );
        w.cover(4.0, 40.0);
        assert_eq!(
            w.span(),
            Some(Span {
                min_ts: 4.0,
                max_end: 44.0
            })
        );
    }
}
