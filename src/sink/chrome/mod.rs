//! Stage `sink`: the Chrome trace JSON writer. It owns the document: the frame (the CPU
//! trace's top-level members around one `traceEvents` list, `traceName`: [`Frame`]) and the
//! events, encoded straight from Arrow arrays; what the events are is decided upstream, in
//! `sql/export/`, which hands the writer plain typed values.
//!
//! A batch's column names are the JSON keys of its events, and say how a value is written:
//! - `k`: a top-level member; `args.k`: a member of the event's `args` object;
//! - integers, floats, booleans and strings as JSON values;
//! - a `[i]` suffix: item `i` of a JSON list, the items' columns side by side from `[0]`
//!   (`"args.grid[0]"`, `"args.grid[1]"`, `"args.grid[2]"`); a NULL item leaves its place
//!   empty, as the reference's string `concat` does, and a list of NULLs is left out;
//! - a `::enum` suffix: a text column of an enumeration's names (written as strings) where a
//!   value without a name comes as its decimal number (written as a number), e.g. a copy
//!   kind `HtoD`, or `12`;
//! - `args.*annotation`: an op's annotation cell (the JSON text of the producer's value) and
//!   `args.*metadata`: a text read as a Python `str`, both spread into `args` as the
//!   reference's `_annotation_to_args` does ([`args`]): an object's members, else one
//!   `annotation` member; `'{}' AS "args.*metadata"` gives an event an empty `args`;
//! - NULL leaves the member out; `args` is written when any of its columns has a member.
//!
//! Numbers are written as Python's `json` writes them (the reference is Python): integers
//! as integers, floats as their shortest round-trip repr (`5000004.5`, `1.0`, `1e-05`).
//!
//! The writer also notes the extent of the duration (`X`) events it writes outside the
//! `Trace` category ([`ChromeWriter::span`]): the profiler span the document ends with
//! covers them, and measuring it here spares a second pass over every plan.

pub mod args;
mod columns;
mod frame;
pub mod index;
mod members;
pub mod remap;

use std::io::Write;

use datafusion::arrow::record_batch::RecordBatch;

use self::columns::{list_item, write_args, Column, Key, Member, Spread};
use crate::error::Error;
use crate::Result;

pub use super::json_text::{write_py_float, write_str};
pub use frame::Frame;
pub use index::{Mark, Place};
pub use remap::Remap;

const FLUSH_AT: usize = 1 << 20;

/// A streaming Chrome trace writer: `try_new` writes the document's head up to the opening
/// of `traceEvents`, events follow (raw JSON text or Arrow batches), `finish` writes the
/// rest of the document. [`ChromeWriter::segment`] writes a stretch of events alone, for a
/// document joined from stretches encoded apart ([`Frame`]).
pub struct ChromeWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    events: u64,
    span: Option<Span>,
    /// bytes handed to `out` so far
    flushed: u64,
    /// the window's renaming in a merged trace; None writes events as they are
    remap: Option<std::sync::Arc<Remap>>,
    /// each event's mark, when a split export asked for them ([`ChromeWriter::with_index`])
    marks: Option<Vec<Mark>>,
    /// `buf` is handed to `out` when it holds this many bytes
    flush_at: usize,
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
    /// Start a document framed by `frame`.
    pub fn try_new(out: W, frame: &Frame) -> Result<Self> {
        let mut w = Self::segment(out);
        w.buf.extend_from_slice(frame.head());
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
            flushed: 0,
            remap: None,
            marks: None,
            flush_at: FLUSH_AT,
        }
    }

    /// Note where each event written from now on is, and what a split needs to place it
    /// ([`ChromeWriter::take_marks`]); the output then takes whole events, a block
    /// ([`index::BLOCK`]) at a time.
    pub fn with_index(mut self, index: bool) -> Self {
        self.marks = index.then(Vec::new);
        if index {
            self.flush_at = index::BLOCK;
        }
        self
    }

    /// The marks of the events written so far (empty without [`ChromeWriter::with_index`]).
    pub fn take_marks(&mut self) -> Vec<Mark> {
        self.marks.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Where the next byte goes in the output.
    fn at(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Rename and shift every event written from now on as `remap` says (a window of a
    /// merged trace); the span ([`ChromeWriter::span`]) stays in the window's own times.
    pub fn with_remap(mut self, remap: Option<std::sync::Arc<Remap>>) -> Self {
        self.remap = remap;
        self
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

    /// Bytes written so far (before any compression by the underlying writer).
    pub fn bytes(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// The extent of the duration events outside the `Trace` category written so far
    /// (raw ones as told through [`ChromeWriter::cover`]); None before the first.
    pub fn span(&self) -> Option<Span> {
        self.span
    }

    /// Copy one event given as JSON text.
    pub fn write_raw(&mut self, event: &str) -> Result<()> {
        if let Some(remap) = &self.remap {
            let event = remap.raw(event)?;
            self.separator();
            self.mark_raw(&event)?;
            self.buf.extend_from_slice(event.as_bytes());
            return self.maybe_flush();
        }
        self.separator();
        self.mark_raw(event)?;
        self.buf.extend_from_slice(event.as_bytes());
        self.maybe_flush()
    }

    /// Note the raw `event` about to be written (when indexing).
    fn mark_raw(&mut self, event: &str) -> Result<()> {
        let start = self.at();
        if let Some(marks) = &mut self.marks {
            let (ts, place) = index::probe(event)?;
            let len = mark_len(event.len())?;
            marks.push(Mark {
                start,
                len,
                ts,
                place,
            });
        }
        Ok(())
    }

    /// Count a duration event written raw (`ts`, `dur` as the reference reads them) towards
    /// [`ChromeWriter::span`]: the writer does not parse raw text.
    pub fn cover(&mut self, ts: f64, dur: f64) {
        Span::cover(&mut self.span, ts, dur);
    }

    /// Encode every row of `batch` as one event (see the module docs for the column names).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        match self.remap.clone() {
            None => self.write_batch(batch, None),
            Some(remap) => self.write_batch(&remap.batch(batch)?, Some(batch)),
        }
    }

    /// Encode `batch`; the span is measured on `original` where the events were remapped.
    fn write_batch(&mut self, batch: &RecordBatch, original: Option<&RecordBatch>) -> Result<()> {
        let schema = batch.schema();
        let mut top: Vec<(Key, Column<'_>)> = Vec::new();
        let mut args: Vec<Member<'_>> = Vec::new();
        let mut args_at = None;
        for (field, array) in schema.fields().iter().zip(batch.columns()) {
            let name = field.name().as_str();
            let (name, named) = match name.strip_suffix("::enum") {
                Some(n) => (n, true),
                None => (name, false),
            };
            let column = Column::new(array.as_ref(), named, name)?;
            let (name, column) = match list_item(name) {
                Some((list, item)) => {
                    let last = match name.starts_with("args.") {
                        true => args.last_mut().and_then(|m| match m {
                            Member::Key(key, column) => Some((&key.name, column)),
                            Member::Spread(_) => None,
                        }),
                        false => top.last_mut().map(|(key, column)| (&key.name, column)),
                    };
                    let key = list.strip_prefix("args.").unwrap_or(list);
                    match last {
                        Some((k, Column::Items(items))) if k == key && items.len() == item => {
                            items.push(column);
                            continue;
                        }
                        _ if item == 0 => (list, Column::Items(vec![column])),
                        _ => {
                            return Err(Error::Internal(format!(
                                "chrome sink: column `{name}` does not follow item {} of `{list}`",
                                item - 1
                            )))
                        }
                    }
                }
                None => (name, column),
            };
            match name.strip_prefix("args.") {
                Some(key) => {
                    args_at.get_or_insert(top.len());
                    args.push(match key.strip_prefix('*') {
                        Some(kind) => {
                            Member::Spread(Spread::new(&column, batch.num_rows(), kind, name)?)
                        }
                        None => Member::Key(Key::new(key), column),
                    });
                }
                None => top.push((Key::new(name), column)),
            }
        }
        let args_key = Key::new("args");
        let original_top = match original {
            Some(original) => span_columns(original)?,
            None => Vec::new(),
        };
        let extent = match original {
            Some(_) => Extent::find(&original_top),
            None => Extent::find(&top),
        };
        let placing = self.marks.is_some().then(|| Placing::find(&top));
        let mut id_text = Vec::new();
        for row in 0..batch.num_rows() {
            self.separator();
            let start = self.at();
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
            if let (Some(placing), Some(marks)) = (&placing, &mut self.marks) {
                let len = mark_len((self.flushed + self.buf.len() as u64 - start) as usize)?;
                let (ts, place) = placing.at(row, &mut id_text);
                marks.push(Mark {
                    start,
                    len,
                    ts,
                    place,
                });
            }
            if let Some(extent) = &extent {
                if extent.counts(row) {
                    Span::cover(&mut self.span, extent.ts.at(row), extent.dur.at(row));
                }
            }
            self.maybe_flush()?;
        }
        Ok(())
    }

    /// Close `traceEvents`, write the rest of `frame` and flush. Returns the underlying
    /// writer.
    pub fn finish(mut self, frame: &Frame) -> Result<W> {
        self.buf.extend_from_slice(frame.tail());
        self.finish_segment()
    }

    fn separator(&mut self) {
        if self.events > 0 {
            self.buf.extend_from_slice(Frame::SEPARATOR);
        }
        self.events += 1;
    }

    fn maybe_flush(&mut self) -> Result<()> {
        if self.buf.len() >= self.flush_at {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> Result<()> {
        self.out.write_all(&self.buf).map_err(io_error)?;
        self.flushed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

/// The columns of `batch` the profiler span reads, as [`Extent::find`] looks them up.
fn span_columns(batch: &RecordBatch) -> Result<Vec<(Key, Column<'_>)>> {
    let schema = batch.schema_ref();
    let mut top = Vec::new();
    for name in ["ph", "cat", "ts", "dur"] {
        if let Ok(i) = schema.index_of(name) {
            top.push((
                Key::new(name),
                Column::new(batch.column(i).as_ref(), false, name)?,
            ));
        }
    }
    Ok(top)
}

fn io_error(e: std::io::Error) -> Error {
    Error::Write(e)
}

/// An event's length as a mark holds it.
fn mark_len(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| Error::Internal(format!("splitting: an event of {len} bytes")))
}

/// The columns of a batch that place its events in a split: `ph`, `ts`, and a flow's
/// `cat`, `name`, `id` ([`index::flow_key`]).
struct Placing<'c, 'a> {
    ph: Option<&'c Column<'a>>,
    ts: Number<'c, 'a>,
    cat: Option<&'c Column<'a>>,
    name: Option<&'c Column<'a>>,
    id: Option<&'c Column<'a>>,
}

impl<'c, 'a> Placing<'c, 'a> {
    fn find(top: &'c [(Key, Column<'a>)]) -> Self {
        let get = |key: &str| top.iter().find(|(k, _)| k.name == key).map(|(_, c)| c);
        Placing {
            ph: get("ph"),
            ts: Number(get("ts")),
            cat: get("cat"),
            name: get("name"),
            id: get("id"),
        }
    }

    /// The row's `ts` and place; `id_text` is scratch room for a flow's id as written.
    fn at(&self, row: usize, id_text: &mut Vec<u8>) -> (f64, Place) {
        let text = |c: Option<&Column<'a>>| c.filter(|c| !c.is_null(row)).map(|c| c.text(row));
        let place = Place::of(text(self.ph), || {
            let id = self.id.filter(|c| !c.is_null(row)).map(|c| {
                id_text.clear();
                c.write(id_text, row);
                std::str::from_utf8(id_text).unwrap_or_default()
            });
            index::flow_key(text(self.cat), text(self.name), id)
        });
        (self.ts.at(row), place)
    }
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

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Float64Array, Int64Array, StringArray};

    use super::*;

    /// The events `batch` encodes to, as text.
    fn events_of(batch: &RecordBatch) -> String {
        let mut w = ChromeWriter::segment(Vec::new());
        w.write(batch).unwrap();
        String::from_utf8(w.finish_segment().unwrap()).unwrap()
    }

    #[test]
    fn lists_enums_and_spreads_are_encoded_by_the_sink() {
        use std::sync::Arc;

        use datafusion::arrow::array::ArrayRef;

        let x: ArrayRef = Arc::new(Int64Array::from(vec![Some(128), None, None]));
        let y: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None]));
        let z: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(i64::MAX), None]));
        let kind: ArrayRef = Arc::new(StringArray::from(vec![Some("HtoD"), Some("12"), None]));
        let annotation: ArrayRef = Arc::new(StringArray::from(vec![
            Some(r#"{"stage": "fwd"}"#),
            Some("null"),
            Some(r#""a \"b\"""#),
        ]));
        let metadata: ArrayRef = Arc::new(StringArray::from(vec![Some("{}"), None, None]));
        let batch = RecordBatch::try_from_iter([
            ("args.grid[0]", x),
            ("args.grid[1]", y),
            ("args.grid[2]", z),
            ("args.copy kind::enum", kind),
            ("args.*annotation", annotation),
            ("args.*metadata", metadata),
        ])
        .unwrap();
        assert_eq!(
            events_of(&batch),
            concat!(
                r#"{"args":{"grid":[128,1,1],"copy kind":"HtoD","stage": "fwd"}},"#,
                r#"{"args":{"grid":[,2,9223372036854775807],"copy kind":12}},"#,
                r#"{"args":{"annotation":"a \"b\""}}"#
            )
        );
    }

    #[test]
    fn an_empty_spread_writes_empty_args_and_odd_names_are_refused() {
        use std::sync::Arc;

        use datafusion::arrow::array::ArrayRef;

        let name: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let metadata: ArrayRef = Arc::new(StringArray::from(vec![Some("{}"), None]));
        let batch =
            RecordBatch::try_from_iter([("name", name), ("args.*metadata", metadata)]).unwrap();
        assert_eq!(events_of(&batch), r#"{"name":"a","args":{}},{"name":"b"}"#);
        let odd: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        for name in ["args.*other", "args.grid[1]"] {
            let batch = RecordBatch::try_from_iter([(name, odd.clone())]).unwrap();
            let mut w = ChromeWriter::segment(Vec::new());
            let err = w.write(&batch).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
        }
    }

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
        let frame = Frame::new([("traceEvents", None)], "t");
        let mut w = ChromeWriter::try_new(Vec::new(), &frame).unwrap();
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
