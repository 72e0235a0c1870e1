//! Stage `cpu_trace`: one process's CPU side -> the window's `cpu_trace.json.gz`, a Kineto
//! trace of NVTX ranges (`user_annotation` X events on their threads), process and thread
//! names (M events) and the GPUs (`deviceProperties`), on the `baseTimeNanoseconds` axis.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use datafusion::arrow::array::{Array, Int64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;

use super::map::ints;
use crate::error::Error;
use crate::Result;

/// The CPU side of one window.
pub struct CpuSide<'a> {
    pub pid: i64,
    pub process_name: Option<&'a str>,
    /// `nsys_thread` rows of the process (pid, tid, name).
    pub threads: &'a RecordBatch,
    /// `nsys_nvtx` rows of the process (pid, tid, name, ts_ns, dur_ns).
    pub nvtx: &'a RecordBatch,
    /// `nsys_device` rows (every GPU of the report).
    pub devices: &'a RecordBatch,
    pub base_ns: i64,
    pub trace_name: &'a str,
}

/// Write `side` to `path` (gzipped); returns the number of events.
pub fn write(side: &CpuSide<'_>, path: &Path) -> Result<u64> {
    let io = |e| Error::io(path, e);
    let file = File::create(path).map_err(io)?;
    let mut gz = flate2::write::GzEncoder::new(
        BufWriter::with_capacity(1 << 20, file),
        flate2::Compression::fast(),
    );
    let events = write_json(&mut gz, side)?;
    gz.finish().map_err(io)?.flush().map_err(io)?;
    Ok(events)
}

fn texts(batch: &RecordBatch, name: &str) -> Result<StringArray> {
    let c = batch
        .column_by_name(name)
        .ok_or_else(|| Error::Internal(format!("no column {name}")))?;
    let a = cast(c, &DataType::Utf8)?;
    a.as_any()
        .downcast_ref::<StringArray>()
        .cloned()
        .ok_or_else(|| Error::Internal(format!("column {name} is not text")))
}

/// `ns` as decimal µs with three fraction digits (exact: the reader parses the digits).
fn micros(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn write_json(out: &mut impl Write, side: &CpuSide<'_>) -> Result<u64> {
    let mut text = String::with_capacity(1 << 16);
    text.push_str("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
    device_properties(&mut text, side.devices)?;
    text.push_str("],\n  \"traceName\": ");
    text.push_str(&json_str(side.trace_name));
    text.push_str(&format!(
        ",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [",
        side.base_ns
    ));
    let mut events = 0u64;
    let mut event = |text: &mut String, body: &str| {
        text.push_str(if events == 0 { "\n  " } else { ",\n  " });
        text.push_str(body);
        events += 1;
    };
    if let Some(name) = side.process_name {
        event(
            &mut text,
            &format!(
                "{{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {}, \"tid\": 0, \"args\": {{\"name\": {}}}}}",
                side.pid,
                json_str(name)
            ),
        );
    }
    let (tids, names) = (ints(side.threads, "tid")?, texts(side.threads, "name")?);
    for i in 0..side.threads.num_rows() {
        if tids.is_null(i) || names.is_null(i) {
            continue;
        }
        event(
            &mut text,
            &format!(
                "{{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": {}}}}}",
                side.pid,
                tids.value(i),
                json_str(names.value(i))
            ),
        );
    }
    let n = side.nvtx;
    let (tids, names) = (ints(n, "tid")?, texts(n, "name")?);
    let (ts, dur) = (ints(n, "ts_ns")?, ints(n, "dur_ns")?);
    for i in 0..n.num_rows() {
        if tids.is_null(i) || ts.is_null(i) || dur.is_null(i) {
            continue;
        }
        let name = if names.is_null(i) { "" } else { names.value(i) };
        event(
            &mut text,
            &format!(
                "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{}}}}",
                json_str(name),
                side.pid,
                tids.value(i),
                micros(ts.value(i).saturating_sub(side.base_ns)),
                micros(dur.value(i))
            ),
        );
        if text.len() > 1 << 20 {
            out.write_all(text.as_bytes())
                .map_err(|e| Error::io("cpu_trace.json.gz", e))?;
            text.clear();
        }
    }
    text.push_str("\n  ]\n}\n");
    out.write_all(text.as_bytes())
        .map_err(|e| Error::io("cpu_trace.json.gz", e))?;
    Ok(events)
}

/// One JSON object per device row: every non-null column as a member.
fn device_properties(text: &mut String, devices: &RecordBatch) -> Result<()> {
    let schema = devices.schema();
    for row in 0..devices.num_rows() {
        text.push_str(if row == 0 { "\n    {" } else { ",\n    {" });
        let mut first = true;
        for (field, column) in schema.fields().iter().zip(devices.columns()) {
            if column.is_null(row) {
                continue;
            }
            let value = if let Some(a) = column.as_any().downcast_ref::<Int64Array>() {
                a.value(row).to_string()
            } else {
                let a = cast(column, &DataType::Utf8)?;
                match a.as_any().downcast_ref::<StringArray>() {
                    Some(s) => json_str(s.value(row)),
                    None => continue,
                }
            };
            if !first {
                text.push_str(", ");
            }
            first = false;
            text.push_str(&json_str(field.name()));
            text.push_str(": ");
            text.push_str(&value);
        }
        text.push('}');
    }
    if devices.num_rows() > 0 {
        text.push_str("\n  ");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_keep_every_nanosecond_digit() {
        assert_eq!(micros(1_234_567), "1234.567");
        assert_eq!(micros(5), "0.005");
        assert_eq!(micros(-1500), "-1.500");
    }
}
