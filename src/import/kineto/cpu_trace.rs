//! The window's `cpu_trace.json.gz`: the trace's top-level members in their order and the
//! events that stay on the CPU side, each copied as written (never re-encoded). A trace
//! without `baseTimeNanoseconds` gets `"baseTimeNanoseconds": 0`, which says what its
//! timestamps already are (µs since the epoch) and puts the window on the same axis.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use flate2::Compression;

use crate::error::Error;
use crate::file::gzip::{self, Piece};
use crate::Result;

use super::doc::{Doc, Member};

/// Write the members of `doc` and the events whose `keep` flag is set to `path` (gzipped, one
/// member). Returns the number of events written.
///
/// The text is compressed in two pieces at once, the second on a thread of its own, joined
/// as pigz joins them ([`crate::file::gzip`]): compressing is the longest part of writing a
/// window, 15 ms of HTA's 15 k-op test trace in one piece.
pub fn write(doc: &Doc, keep: &[bool], path: &Path) -> Result<u64> {
    let io = |e| Error::io(path, e);
    let kept = kept(doc, keep);
    let half = halfway(&kept);
    let file = File::create(path).map_err(io)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    out.write_all(&gzip::HEADER).map_err(io)?;
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| {
            let mut piece = Piece::new(Vec::new(), Compression::fast());
            write_events(&mut piece, &kept[half..], half > 0)?;
            write_tail(&mut piece, doc)?;
            piece.finish()
        });
        let mut piece = Piece::new(&mut out, Compression::fast());
        let first = write_head(&mut piece, doc)
            .and_then(|()| write_events(&mut piece, &kept[..half], false))
            .and_then(|()| piece.finish());
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first.map(|(_, sum)| sum), second)
    });
    let mut sum = first.map_err(io)?;
    let (bytes, second_sum) = second.map_err(io)?;
    sum.then(&second_sum);
    out.write_all(&bytes).map_err(io)?;
    out.write_all(&gzip::trailer(&sum)).map_err(io)?;
    out.flush().map_err(io)?;
    Ok(kept.len() as u64)
}

/// The raw text of the events whose `keep` flag is set, in file order.
fn kept<'a>(doc: &Doc<'a>, keep: &[bool]) -> Vec<&'a str> {
    doc.events
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(raw, _)| *raw)
        .collect()
}

/// The index that splits `events` into two runs of about the same length.
fn halfway(events: &[&str]) -> usize {
    let total: usize = events.iter().map(|e| e.len()).sum();
    let mut length = 0;
    events
        .iter()
        .position(|e| {
            length += e.len();
            length > total / 2
        })
        .unwrap_or(events.len())
}

#[cfg(test)]
fn write_json<W: Write>(out: &mut W, doc: &Doc, keep: &[bool]) -> std::io::Result<u64> {
    let kept = kept(doc, keep);
    write_head(out, doc)?;
    write_events(out, &kept, false)?;
    write_tail(out, doc)?;
    Ok(kept.len() as u64)
}

/// `{`, the members before `traceEvents`, and its opening `[`.
fn write_head<W: Write>(out: &mut W, doc: &Doc) -> std::io::Result<()> {
    out.write_all(b"{")?;
    for (i, member) in doc.members.iter().enumerate() {
        match member {
            Member::Raw(name, raw) => {
                write_key(out, i == 0, name)?;
                out.write_all(raw.as_bytes())?;
            }
            Member::Events => {
                write_key(out, i == 0, "traceEvents")?;
                return out.write_all(b"[");
            }
        }
    }
    Ok(())
}

/// The events, each as written; `after_some` when events were written before them.
fn write_events<W: Write>(out: &mut W, events: &[&str], after_some: bool) -> std::io::Result<()> {
    for (i, raw) in events.iter().enumerate() {
        out.write_all(if i == 0 && !after_some {
            b"\n  "
        } else {
            b",\n  "
        })?;
        out.write_all(raw.as_bytes())?;
    }
    Ok(())
}

/// The closing `]` of `traceEvents`, the members after it, and the closing `}`.
fn write_tail<W: Write>(out: &mut W, doc: &Doc) -> std::io::Result<()> {
    out.write_all(b"\n]")?;
    let events_at = doc
        .members
        .iter()
        .position(|m| matches!(m, Member::Events))
        .unwrap_or(doc.members.len());
    for member in &doc.members[events_at + 1..] {
        if let Member::Raw(name, raw) = member {
            write_key(out, false, name)?;
            out.write_all(raw.as_bytes())?;
        }
    }
    if doc.base_ns.is_none() {
        write_key(out, false, "baseTimeNanoseconds")?;
        out.write_all(b"0")?;
    }
    out.write_all(b"\n}\n")
}

fn write_key<W: Write>(out: &mut W, first: bool, name: &str) -> std::io::Result<()> {
    out.write_all(if first { b"\n  " } else { b",\n  " })?;
    serde_json::to_writer(&mut *out, name)?;
    out.write_all(b": ")
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

    #[test]
    fn the_file_is_one_gzip_member_of_the_same_text_in_two_pieces() {
        let text = br#"{"a": 1, "traceEvents": [{"ph":"X"}, {"ph":"f"}, {"ph":"M", "name": "long enough"}, {"ph":"i"}], "z": 2}"#;
        let doc = Doc::parse(text, Path::new("t.json")).unwrap();
        let keep = [true, false, true, true];
        let mut expected = Vec::new();
        write_json(&mut expected, &doc, &keep).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cpu_trace.json.gz");
        assert_eq!(write(&doc, &keep, &path).unwrap(), 3);
        let gz = std::fs::read(&path).unwrap();
        // a reader of exactly one member, which must end the file
        let mut one = flate2::bufread::GzDecoder::new(&gz[..]);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut one, &mut got).unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            String::from_utf8(expected).unwrap()
        );
        assert!(one.into_inner().is_empty(), "bytes after the member");
    }

    #[test]
    fn halfway_splits_by_length() {
        assert_eq!(halfway(&[]), 0);
        assert_eq!(halfway(&["aaaa", "b", "c"]), 0);
        assert_eq!(halfway(&["a", "b", "c", "d"]), 2);
        assert_eq!(halfway(&["a", "b", "cccccc"]), 2);
    }
}
