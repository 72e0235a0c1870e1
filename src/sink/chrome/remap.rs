//! A window's place in a merged Chrome trace: the renaming and time shift the writer applies
//! to every event of one window as it writes it, so that several windows (ranks) share one
//! document without their processes, flows or clocks colliding. A writer without a
//! [`Remap`] writes the events untouched (the single-window export).
//!
//! What changes, for the window at position `ordinal` of the merged trace:
//! - `pid`: a number `p` becomes `(ordinal + 1) * 2^24 + p` (Linux pids are below 2^22; a
//!   pid outside [-2^22, 2^22) becomes `(ordinal + 1) * 2^24 + 2^22 + p mod 2^22`), text
//!   becomes `"<prefix><text>"`;
//! - `ts`: shifted by `shift_ns` (µs, rounded to the nanosecond);
//! - `id` of a flow event (`s`, `t`, `f`): plus `ordinal * 2^42` (the window's own ids are
//!   below 2^42: correlation ids, graph edges from 2^40);
//! - `process_name` and `process_labels` metadata: their `args.name` / `args.labels` get the
//!   prefix (`rank 3 · python`, `rank 3 · GPU 0`); `process_sort_index`: `args.sort_index`
//!   plus `ordinal * 2^32`, so each window's processes sort together, in their own order.
//!
//! Thread ids stay: a thread belongs to its (renamed) process.

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema};
use serde_json::Value;

use super::members::{members, plain_str};

use crate::error::Error;
use crate::Result;

/// Numeric pids of window `ordinal` live in `[(ordinal + 0.75), (ordinal + 1.5)) * PID_STRIDE`.
pub const PID_STRIDE: i64 = 1 << 24;
/// Pids in `[-PID_RANGE, PID_RANGE)` keep their value apart from the window's offset.
const PID_RANGE: i64 = 1 << 22;

/// Pid `pid` of window `ordinal` in a merged trace.
pub fn merged_pid(ordinal: u32, pid: i64) -> i64 {
    let base = (i64::from(ordinal) + 1) * PID_STRIDE;
    match (-PID_RANGE..PID_RANGE).contains(&pid) {
        true => base + pid,
        false => base + PID_RANGE + pid.rem_euclid(PID_RANGE),
    }
}
/// Flow ids of window `ordinal` live in `[ordinal, ordinal + 1) * FLOW_STRIDE`.
pub const FLOW_STRIDE: i64 = 1 << 42;
/// Process sort indexes of window `ordinal` are `ordinal * SORT_STRIDE` plus their own.
pub const SORT_STRIDE: i64 = 1 << 32;

/// How one window's events are renamed and shifted in a merged trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remap {
    /// the window's position in the merged trace (0 first)
    pub ordinal: u32,
    /// put before process names, labels and text pids: `rank 3 · `
    pub prefix: String,
    /// added to every timestamp, ns
    pub shift_ns: i64,
}

impl Remap {
    /// A numeric pid, renamed.
    pub fn pid(&self, pid: i64) -> Result<i64> {
        Ok(merged_pid(self.ordinal, pid))
    }

    /// A flow id, renamed.
    pub fn flow_id(&self, id: i64) -> Result<i64> {
        if !(0..FLOW_STRIDE).contains(&id) {
            return Err(Error::Usage(format!(
                "flow id {id}: outside [0, 2^42), so it cannot be kept apart in a merged trace"
            )));
        }
        Ok(i64::from(self.ordinal) * FLOW_STRIDE + id)
    }

    /// A process sort index, renamed.
    pub fn sort_index(&self, index: i64) -> i64 {
        i64::from(self.ordinal) * SORT_STRIDE + index
    }

    /// A timestamp (µs), shifted.
    pub fn ts(&self, ts: f64) -> f64 {
        if self.shift_ns == 0 {
            return ts;
        }
        // To the nanosecond where a double holds it, so the shifted value prints as short as
        // the original; beyond 2^53 ns the double's own step is coarser anyway.
        if ts.abs() < 9.0e12 {
            ((ts * 1000.0).round() + self.shift_ns as f64) / 1000.0
        } else {
            ts + self.shift_ns as f64 / 1000.0
        }
    }

    fn text(&self, text: &str) -> String {
        format!("{}{text}", self.prefix)
    }

    /// `batch`'s events renamed and shifted (columns named as the Chrome sink reads them).
    pub fn batch(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let schema = batch.schema();
        let index = |name: &str| schema.index_of(name).ok();
        let names = index("name").map(|i| batch.column(i));
        let phases = index("ph").map(|i| batch.column(i));
        let is = |column: Option<&ArrayRef>, row: usize, values: &[&str]| {
            column.is_some_and(|c| text_at(c, row).is_some_and(|t| values.contains(&t)))
        };
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(fields.capacity());
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            let rows = column.len();
            let mapped: ArrayRef = match field.name().as_str() {
                "pid" if is_text(column.data_type()) => Arc::new(
                    (0..rows)
                        .map(|r| text_at(column, r).map(|t| self.text(t)))
                        .collect::<StringArray>(),
                ),
                "pid" if column.data_type() != &DataType::Null => {
                    let ints = as_int64(column)?;
                    Arc::new(ints.try_unary::<_, Int64Type, Error>(|p| self.pid(p))?)
                }
                "ts" if column.data_type() != &DataType::Null => {
                    let floats = cast(column, &DataType::Float64)?;
                    let floats = floats.as_primitive::<Float64Type>();
                    Arc::new(floats.unary::<_, Float64Type>(|t| self.ts(t)))
                }
                "id" if column.data_type() != &DataType::Null => {
                    let ints = as_int64(column)?;
                    let mut out = Vec::with_capacity(rows);
                    for row in 0..rows {
                        out.push(match ints.is_valid(row) {
                            false => None,
                            true if is(phases, row, &["s", "t", "f"]) || phases.is_none() => {
                                Some(self.flow_id(ints.value(row))?)
                            }
                            true => Some(ints.value(row)),
                        });
                    }
                    Arc::new(Int64Array::from(out))
                }
                "args.name" | "args.labels" if is_text(column.data_type()) => {
                    let renamed = ["process_name", "process_labels"];
                    Arc::new(
                        (0..rows)
                            .map(|r| {
                                let text = text_at(column, r)?;
                                Some(match is(names, r, &renamed) {
                                    true => self.text(text),
                                    false => text.to_string(),
                                })
                            })
                            .collect::<StringArray>(),
                    )
                }
                "args.sort_index" if column.data_type() != &DataType::Null => {
                    let ints = as_int64(column)?;
                    Arc::new(
                        (0..rows)
                            .map(|r| {
                                let v = ints.is_valid(r).then(|| ints.value(r))?;
                                Some(match is(names, r, &["process_sort_index"]) {
                                    true => self.sort_index(v),
                                    false => v,
                                })
                            })
                            .collect::<Int64Array>(),
                    )
                }
                _ => column.clone(),
            };
            fields.push(Field::new(
                field.name(),
                mapped.data_type().clone(),
                field.is_nullable(),
            ));
            columns.push(mapped);
        }
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }

    /// One event given as JSON text (the CPU trace's, copied as written), renamed and
    /// shifted, as JSON text.
    pub fn raw(&self, event: &str) -> Result<String> {
        match self.raw_in_place(event)? {
            Some(renamed) => Ok(renamed),
            None => self.raw_by_value(event),
        }
    }

    /// `event` with the text of its `pid`, `ts` and flow `id` replaced where they stand, the
    /// rest copied ([`members`]); None where [`Remap::raw_by_value`] must read it: metadata
    /// (whose `args` are renamed), an escaped key or `ph`, a repeated member.
    fn raw_in_place(&self, event: &str) -> Result<Option<String>> {
        let Some(found) = members(event) else {
            return Ok(None);
        };
        let (mut pid, mut ts, mut ph, mut id) = (None, None, None, None);
        for member in found {
            let slot = match member.key {
                "pid" => &mut pid,
                "ts" => &mut ts,
                "ph" => &mut ph,
                "id" => &mut id,
                key if key.contains('\\') => return Ok(None),
                _ => continue,
            };
            if slot.replace(member.value).is_some() {
                return Ok(None);
            }
        }
        let ph = match ph.map(|r| &event[r]) {
            Some(text) if text.starts_with('"') => match plain_str(text) {
                Some(ph) => Some(ph),
                None => return Ok(None),
            },
            _ => None,
        };
        if ph == Some("M") {
            return Ok(None);
        }
        let mut edits: Vec<(Range<usize>, String)> = Vec::with_capacity(3);
        if let Some(at) = pid {
            if let Some(text) = self.renamed_id(&event[at.clone()], |p| self.pid(p), "pid")? {
                edits.push((at, text));
            }
        }
        if let Some(at) = ts.filter(|_| self.shift_ns != 0) {
            if let Ok(t) = serde_json::from_str::<f64>(&event[at.clone()]) {
                edits.push((at, Value::from(self.ts(t)).to_string()));
            }
        }
        if let Some(at) = id.filter(|_| matches!(ph, Some("s" | "t" | "f"))) {
            let renamed = self.renamed_id(&event[at.clone()], |i| self.flow_id(i), "flow id")?;
            if let Some(text) = renamed {
                edits.push((at, text));
            }
        }
        edits.sort_by_key(|(at, _)| at.start);
        let mut out = String::with_capacity(event.len() + 32);
        let mut copied = 0;
        for (at, text) in edits {
            out.push_str(&event[copied..at.start]);
            out.push_str(&text);
            copied = at.end;
        }
        out.push_str(&event[copied..]);
        Ok(Some(out))
    }

    /// The text of a renamed pid or flow id given as `value`'s JSON text: a number through
    /// `rename`, a string prefixed; None leaves any other value as it is.
    fn renamed_id(
        &self,
        value: &str,
        rename: impl Fn(i64) -> Result<i64>,
        what: &str,
    ) -> Result<Option<String>> {
        if let Some(rest) = value.strip_prefix('"') {
            let prefix = Value::from(self.prefix.as_str()).to_string();
            return Ok(Some(format!("{}{rest}", &prefix[..prefix.len() - 1])));
        }
        match serde_json::from_str::<serde_json::Number>(value) {
            Err(_) => Ok(None),
            Ok(n) => match n.as_i64() {
                Some(i) => Ok(Some(rename(i)?.to_string())),
                None => Err(Error::Usage(format!(
                    "{what} {n}: not an integer, so it cannot be kept apart in a merged trace"
                ))),
            },
        }
    }

    /// [`Remap::raw`] through a parsed value (metadata, and events the scan leaves).
    fn raw_by_value(&self, event: &str) -> Result<String> {
        let bad = |e: serde_json::Error| Error::Internal(format!("merging a CPU-trace event: {e}"));
        let mut value: Value = serde_json::from_str(event).map_err(bad)?;
        if let Value::Object(members) = &mut value {
            if let Some(pid) = members.get_mut("pid") {
                match pid {
                    Value::String(text) => *text = self.text(text),
                    Value::Number(n) => match n.as_i64() {
                        Some(p) => *pid = Value::from(self.pid(p)?),
                        None => {
                            return Err(Error::Usage(format!(
                            "pid {n}: not an integer, so it cannot be kept apart in a merged trace"
                        )))
                        }
                    },
                    _ => {}
                }
            }
            if self.shift_ns != 0 {
                if let Some(ts) = members.get_mut("ts") {
                    if let Some(t) = ts.as_f64() {
                        *ts = Value::from(self.ts(t));
                    }
                }
            }
            let ph = members
                .get("ph")
                .and_then(Value::as_str)
                .map(str::to_string);
            let name = members
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_string);
            if matches!(ph.as_deref(), Some("s" | "t" | "f")) {
                if let Some(id) = members.get_mut("id") {
                    match id {
                        Value::Number(n) => match n.as_i64() {
                            Some(i) => *id = Value::from(self.flow_id(i)?),
                            None => {
                                return Err(Error::Usage(format!(
                                    "flow id {n}: not an integer, so it cannot be kept apart"
                                )))
                            }
                        },
                        Value::String(text) => *text = self.text(text),
                        _ => {}
                    }
                }
            }
            if ph.as_deref() == Some("M") {
                let args = members.get_mut("args").and_then(Value::as_object_mut);
                match (name.as_deref(), args) {
                    (Some("process_name"), Some(args)) => rename(args, "name", self),
                    (Some("process_labels"), Some(args)) => rename(args, "labels", self),
                    (Some("process_sort_index"), Some(args)) => {
                        if let Some(v) = args.get_mut("sort_index") {
                            if let Some(i) = v.as_i64() {
                                *v = Value::from(self.sort_index(i));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        serde_json::to_string(&value).map_err(bad)
    }
}

fn rename(args: &mut serde_json::Map<String, Value>, key: &str, remap: &Remap) {
    if let Some(Value::String(text)) = args.get_mut(key) {
        *text = remap.text(text);
    }
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn as_int64(column: &ArrayRef) -> Result<Int64Array> {
    let ints = cast(column, &DataType::Int64)?;
    Ok(ints.as_primitive::<Int64Type>().clone())
}

/// The text at `row` of a text column; None for NULL or another type.
fn text_at(column: &ArrayRef, row: usize) -> Option<&str> {
    if column.is_null(row) {
        return None;
    }
    match column.data_type() {
        DataType::Utf8 => Some(column.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Some(column.as_string::<i64>().value(row)),
        DataType::Utf8View => Some(column.as_string_view().value(row)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::Float64Array;

    use super::*;

    fn remap() -> Remap {
        Remap {
            ordinal: 2,
            prefix: "rank 2 · ".into(),
            shift_ns: 1_500,
        }
    }

    #[test]
    fn a_raw_event_is_renamed_and_shifted() {
        let r = remap();
        let out: Value = serde_json::from_str(
            &r.raw(r#"{"ph":"M","name":"process_name","pid":7,"tid":7,"ts":1.25,"args":{"name":"python"}}"#)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(out["pid"], 3 * PID_STRIDE + 7);
        assert_eq!(out["tid"], 7);
        assert_eq!(out["ts"], 2.75);
        assert_eq!(out["args"]["name"], "rank 2 · python");
        let flow: Value =
            serde_json::from_str(&r.raw(r#"{"ph":"f","id":9,"pid":"GPU","ts":0}"#).unwrap())
                .unwrap();
        assert_eq!(flow["id"], 2 * FLOW_STRIDE + 9);
        assert_eq!(flow["pid"], "rank 2 · GPU");
        assert_eq!(
            r.pid(i64::from(i32::MAX)).unwrap(),
            3 * PID_STRIDE + (1 << 23) - 1
        );
        assert!(r.flow_id(-1).is_err());
    }

    #[test]
    fn raw_events_renamed_in_place_equal_the_parsed_renaming() {
        let events = [
            r#"{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":8,"ts":5000004.286,"dur":3,"args":{"pid":1,"ts":2,"id":3}}"#,
            r#"{"ph":"s","id":9,"pid":"GPU \"0\"","tid":1,"ts":1e3,"cat":"ac2g","name":"n"}"#,
            r#"{ "ts" : 12 , "id" : 4 , "pid" : -1 , "ph" : "i" }"#,
            r#"{"ph":"f","id":"0x9","pid":7,"ts":0,"bp":"e"}"#,
            r#"{"ph":"X","pid":true,"ts":"late","name":"odd"}"#,
            r#"{"name":"no phase","pid":123456789,"ts":1.5}"#,
        ];
        for shift_ns in [0, 1_500, -7] {
            let r = Remap {
                shift_ns,
                ..remap()
            };
            for event in events {
                let in_place = r.raw_in_place(event).unwrap().expect("renamed in place");
                let parsed = |text: &str| serde_json::from_str::<Value>(text).unwrap();
                let by_value = parsed(&r.raw_by_value(event).unwrap());
                assert_eq!(parsed(&in_place), by_value, "{event}");
            }
        }
        let r = remap();
        // metadata, an escaped key and a repeated member are renamed through the parsed value
        for event in [
            r#"{"ph":"M","name":"process_name","pid":7,"args":{"name":"python"}}"#,
            r#"{"p\u0069d":7}"#,
            r#"{"pid":7,"pid":8}"#,
        ] {
            assert_eq!(r.raw_in_place(event).unwrap(), None, "{event}");
        }
        assert!(r.raw(r#"{"ph":"X","pid":7.5}"#).is_err());
        assert!(r.raw(r#"{"ph":"s","id":1.5}"#).is_err());
    }

    #[test]
    fn a_batch_is_renamed_and_shifted_where_its_rows_say() {
        let r = remap();
        let name: ArrayRef = Arc::new(StringArray::from(vec!["process_name", "thread_name"]));
        let args: ArrayRef = Arc::new(StringArray::from(vec!["python", "thread 7"]));
        let pid: ArrayRef = Arc::new(Int64Array::from(vec![-1, 0]));
        let ts: ArrayRef = Arc::new(Float64Array::from(vec![5000004.286, 0.0]));
        let batch = RecordBatch::try_from_iter([
            ("name", name),
            ("pid", pid),
            ("ts", ts),
            ("args.name", args),
        ])
        .unwrap();
        let out = r.batch(&batch).unwrap();
        let pids = out.column(1).as_primitive::<Int64Type>();
        assert_eq!(
            pids.values().to_vec(),
            vec![3 * PID_STRIDE - 1, 3 * PID_STRIDE]
        );
        let ts = out.column(2).as_primitive::<Float64Type>();
        assert_eq!(ts.values().to_vec(), vec![5000005.786, 1.5]);
        let names = out.column(3).as_string::<i32>();
        assert_eq!(names.value(0), "rank 2 · python");
        assert_eq!(names.value(1), "thread 7");
    }
}
