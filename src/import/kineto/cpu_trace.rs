//! The window's `cpu_trace.json.gz`: the trace's top-level members in their order and the
//! events that stay on the CPU side, each copied as written (never re-encoded). A trace
//! without `baseTimeNanoseconds` gets `"baseTimeNanoseconds": 0`, which says what its
//! timestamps already are (µs since the epoch) and puts the window on the same axis.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::Error;
use crate::Result;

use super::doc::{Doc, Member};

/// Write the members of `doc` and the events whose `keep` flag is set to `path` (gzipped).
/// Returns the number of events written.
pub fn write(doc: &Doc, keep: &[bool], path: &Path) -> Result<u64> {
    let io = |e| Error::io(path, e);
    let file = File::create(path).map_err(io)?;
    let mut gz = flate2::write::GzEncoder::new(
        BufWriter::with_capacity(1 << 20, file),
        flate2::Compression::fast(),
    );
    let kept = write_json(&mut gz, doc, keep).map_err(io)?;
    gz.finish().map_err(io)?.flush().map_err(io)?;
    Ok(kept)
}

fn write_json<W: Write>(out: &mut W, doc: &Doc, keep: &[bool]) -> std::io::Result<u64> {
    let mut kept = 0;
    out.write_all(b"{")?;
    let mut first = true;
    let mut key = |out: &mut W, name: &str| -> std::io::Result<()> {
        out.write_all(if first { b"\n  " } else { b",\n  " })?;
        first = false;
        serde_json::to_writer(&mut *out, name)?;
        out.write_all(b": ")
    };
    for member in &doc.members {
        match member {
            Member::Raw(name, raw) => {
                key(out, name)?;
                out.write_all(raw.as_bytes())?;
            }
            Member::Events => {
                key(out, "traceEvents")?;
                out.write_all(b"[")?;
                for (raw, _) in doc.events.iter().zip(keep).filter(|(_, k)| **k) {
                    out.write_all(if kept == 0 { b"\n  " } else { b",\n  " })?;
                    out.write_all(raw.as_bytes())?;
                    kept += 1;
                }
                out.write_all(b"\n]")?;
            }
        }
    }
    if doc.base_ns.is_none() {
        key(out, "baseTimeNanoseconds")?;
        out.write_all(b"0")?;
    }
    out.write_all(b"\n}\n")?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_and_kept_events_are_copied_as_written() {
        let text = br#"{"schemaVersion": 1, "traceEvents": [{"ph":"X", "ts": 1.50}, {"ph":"f"}, {"ph":"M"}], "traceName": "t"}"#;
        let doc = Doc::parse(text, Path::new("t.json")).unwrap();
        let mut out = Vec::new();
        let kept = write_json(&mut out, &doc, &[true, false, true]).unwrap();
        assert_eq!(kept, 2);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n  {\"ph\":\"X\", \"ts\": 1.50},\n  {\"ph\":\"M\"}\n],\n  \"traceName\": \"t\",\n  \"baseTimeNanoseconds\": 0\n}\n"
        );
        serde_json::from_str::<serde_json::Value>(&out).unwrap();
    }
}
