//! The split's copy pass: each part written, on every core, from its runs: byte ranges of
//! the sources and bytes of its own (the document's frame, separators, packets rewritten).
//! A gzipped part is one gzip member made of the sources' compressed blocks: a block that a
//! run covers whole is copied as it is, and only the blocks a cut falls in are inflated and
//! compressed again. A source is what one writer wrote: a Chrome segment, or a whole
//! `.pftrace`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use flate2::Compression;

use crate::error::Error;
use crate::file::gzip::{self, Block, Checksum, Piece};
use crate::Result;

/// The bytes a writer wrote, uncompressed or as blocks of a gzip piece.
pub(crate) struct Source<'a> {
    pub file: &'a File,
    /// its bytes before compression
    pub bytes: u64,
    /// its blocks, when compressed (else empty)
    pub blocks: &'a [Block],
}

/// What a part holds: runs, in order.
#[derive(Default)]
pub(crate) struct PartRuns<'a> {
    pub runs: Vec<Run<'a>>,
}

/// A stretch of a part.
pub(crate) enum Run<'a> {
    /// the bytes `start..end` of a source (before compression)
    Copy { source: usize, start: u64, end: u64 },
    /// these bytes (the frame, a separator, a packet rewritten)
    Put(Cow<'a, [u8]>),
}

impl<'a> PartRuns<'a> {
    /// Its bytes (uncompressed).
    pub fn bytes(&self) -> u64 {
        (self.runs.iter())
            .map(|run| match run {
                Run::Copy { start, end, .. } => end - start,
                Run::Put(bytes) => bytes.len() as u64,
            })
            .sum()
    }

    /// Add the bytes `start..end` of `source`, as part of the last run when they follow it
    /// within `gap` bytes (the bytes between, a separator, are copied too).
    pub fn copy(&mut self, source: usize, start: u64, end: u64, gap: u64) {
        match self.runs.last_mut() {
            Some(Run::Copy {
                source: s, end: e, ..
            }) if *s == source && *e + gap == start => *e = end,
            _ => self.runs.push(Run::Copy { source, start, end }),
        }
    }

    pub fn put(&mut self, bytes: impl Into<Cow<'a, [u8]>>) {
        self.runs.push(Run::Put(bytes.into()));
    }
}

/// Write each part into its file (from the file's offset on), the largest parts first, on
/// every core: as it is, or, with `gzip` (the level of what is compressed again), as one
/// gzip member.
pub(crate) fn write_runs(
    parts: &[PartRuns],
    sources: &[Source],
    files: &[&File],
    gzip: Option<Compression>,
) -> Result<()> {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|k| std::cmp::Reverse(parts[*k].bytes()));
    let cores = crate::threads::cores();
    let taken = AtomicUsize::new(0);
    let recompressed = AtomicU64::new(0);
    let work = |_| -> Result<()> {
        let mut window = Window::default();
        loop {
            let Some(&k) = order.get(taken.fetch_add(1, Ordering::Relaxed)) else {
                return Ok(());
            };
            let out = BufWriter::with_capacity(1 << 20, files[k]);
            let out = match gzip {
                Some(level) => {
                    let (out, again) = write_gzip(&parts[k], sources, out, level)?;
                    recompressed.fetch_add(again, Ordering::Relaxed);
                    out
                }
                None => write_plain(&parts[k], sources, out, &mut window)?,
            };
            out.into_inner().map_err(|e| Error::Write(e.into_error()))?;
        }
    };
    for done in crate::threads::on_threads((0..cores).collect(), work) {
        done?;
    }
    if gzip.is_some() {
        let total: u64 = sources.iter().map(|s| s.bytes).sum();
        let again = recompressed.into_inner();
        crate::profile::note(&format!(
            "split: {again} of {total} bytes compressed again, in the blocks the cuts fall in"
        ));
    }
    Ok(())
}

/// A part's runs, as they are.
fn write_plain<W: Write>(
    part: &PartRuns,
    sources: &[Source],
    mut out: W,
    window: &mut Window,
) -> Result<W> {
    for run in &part.runs {
        let (source, start, end) = match *run {
            Run::Copy { source, start, end } => (&sources[source], start, end),
            Run::Put(ref bytes) => {
                out.write_all(bytes).map_err(Error::Write)?;
                continue;
            }
        };
        window.clear();
        let mut from = start;
        while from < end {
            let bytes = window.at(source.file, source.bytes, from, end)?;
            let len = bytes.len() as u64;
            out.write_all(bytes).map_err(Error::Write)?;
            from += len;
        }
    }
    Ok(out)
}

/// A part's runs as one gzip member, made of its sources' blocks: a block the runs cover
/// whole is copied compressed; the bytes of a block they cover in part are inflated and
/// compressed again (at `level`). The writer, and the bytes compressed again.
fn write_gzip<W: Write>(
    part: &PartRuns,
    sources: &[Source],
    mut out: W,
    level: Compression,
) -> Result<(W, u64)> {
    out.write_all(&gzip::HEADER).map_err(Error::Write)?;
    let mut out = PieceOut {
        out,
        sum: Checksum::default(),
        fresh: None,
        level,
    };
    let mut again = 0;
    // the block last inflated: (source, block, its bytes)
    let mut inflated: Option<(usize, usize, Vec<u8>)> = None;
    let mut z = Vec::new();
    for run in &part.runs {
        let (s, start, end) = match *run {
            Run::Copy { source, start, end } => (source, start, end),
            Run::Put(ref bytes) => {
                out.compress(bytes)?;
                continue;
            }
        };
        let source = &sources[s];
        let read = |block: &Block, z: &mut Vec<u8>| -> Result<()> {
            z.resize((block.z.end - block.z.start) as usize, 0);
            (source.file.read_exact_at(z, block.z.start)).map_err(Error::Write)
        };
        let blocks = source.blocks;
        let mut b = blocks.partition_point(|block| block.raw.end <= start);
        let mut at = start;
        while at < end {
            let block = blocks.get(b).ok_or_else(|| {
                Error::Internal(format!("splitting: no block holds byte {at} of a source"))
            })?;
            let to = end.min(block.raw.end);
            if at == block.raw.start && to == block.raw.end {
                read(block, &mut z)?;
                out.copy(&z, &block.sum)?;
            } else {
                if inflated.as_ref().is_none_or(|(i, k, _)| (*i, *k) != (s, b)) {
                    read(block, &mut z)?;
                    let len = (block.raw.end - block.raw.start) as usize;
                    let raw = gzip::inflate_block(&z, len).map_err(Error::Write)?;
                    inflated = Some((s, b, raw));
                }
                let raw = &inflated.as_ref().expect("inflated above").2;
                out.compress(
                    &raw[(at - block.raw.start) as usize..(to - block.raw.start) as usize],
                )?;
                again += to - at;
            }
            at = to;
            b += 1;
        }
    }
    let (mut out, sum) = out.finish()?;
    out.write_all(&gzip::trailer(&sum)).map_err(Error::Write)?;
    Ok((out, again))
}

/// A gzip piece made of compressed blocks copied as they are and bytes compressed here.
struct PieceOut<W: Write> {
    out: W,
    sum: Checksum,
    /// the bytes being compressed since the last block copied, as a piece of their own
    fresh: Option<Piece<Vec<u8>>>,
    level: Compression,
}

impl<W: Write> PieceOut<W> {
    fn compress(&mut self, bytes: &[u8]) -> Result<()> {
        let level = self.level;
        let fresh = (self.fresh).get_or_insert_with(|| Piece::new(Vec::new(), level));
        fresh.write_all(bytes).map_err(Error::Write)
    }

    /// Append a block's compressed bytes `z`, whose uncompressed bytes have checksum `sum`.
    fn copy(&mut self, z: &[u8], sum: &Checksum) -> Result<()> {
        self.end_fresh()?;
        self.out.write_all(z).map_err(Error::Write)?;
        self.sum.then(sum);
        Ok(())
    }

    fn end_fresh(&mut self) -> Result<()> {
        if let Some(piece) = self.fresh.take() {
            let (bytes, sum) = piece.finish().map_err(Error::Write)?;
            self.out.write_all(&bytes).map_err(Error::Write)?;
            self.sum.then(&sum);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(W, Checksum)> {
        self.end_fresh()?;
        Ok((self.out, self.sum))
    }
}

/// A stretch of a source's file read ahead: units read their runs through it, so that
/// many short runs close together cost one read.
#[derive(Default)]
struct Window {
    buf: Vec<u8>,
    start: u64,
}

impl Window {
    const SIZE: u64 = 4 << 20;

    fn clear(&mut self) {
        self.buf.clear();
    }

    /// The file's bytes from `at` (up to `end`), read ahead when the window lacks them.
    fn at(&mut self, file: &File, len: u64, at: u64, end: u64) -> Result<&[u8]> {
        let held = self.start..self.start + self.buf.len() as u64;
        if !held.contains(&at) {
            let size = Self::SIZE.min(len - at) as usize;
            self.buf.resize(size, 0);
            file.read_exact_at(&mut self.buf, at)
                .map_err(Error::Write)?;
            self.start = at;
        }
        let from = (at - self.start) as usize;
        let to = (end - self.start).min(self.buf.len() as u64) as usize;
        Ok(&self.buf[from..to])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_gzipped_part_holds_its_runs_and_copies_the_blocks_they_cover_whole() {
        let dir = tempfile::tempdir().unwrap();
        let sink = crate::export::segments::SegmentSink {
            dir: dir.path().to_path_buf(),
            gzip: true,
            remap: None,
            index: true,
        };
        let mut writer = sink.writer().unwrap();
        let events: Vec<String> = (0..20_000)
            .map(|i| {
                format!(
                    r#"{{"ph":"X","ts":{i},"dur":1,"name":"kernel {}"}}"#,
                    i % 97
                )
            })
            .collect();
        for e in &events {
            writer.write_raw(e).unwrap();
        }
        let segment = sink.finish(writer).unwrap();
        assert!(segment.blocks.len() > 4, "{} blocks", segment.blocks.len());
        let m = &segment.marks;
        let end = |i: usize| m[i].start + u64::from(m[i].len);
        // events 100..12000 and 15000..15010: runs of a part cut inside blocks
        let mut part = PartRuns::default();
        part.put(&b"["[..]);
        part.copy(0, m[100].start, end(11_999), 1);
        part.put(&b","[..]);
        part.copy(0, m[15_000].start, end(15_004), 1);
        // follows the last run, but for the separator between them
        part.copy(0, m[15_005].start, end(15_009), 1);
        part.put(&b"]"[..]);
        assert_eq!(part.runs.len(), 5);
        let source = Source {
            file: &segment.file,
            bytes: segment.bytes,
            blocks: &segment.blocks,
        };
        let (gz, again) = write_gzip(&part, &[source], Vec::new(), Compression::fast()).unwrap();
        let mut text = String::new();
        (flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)).unwrap();
        let want = format!(
            "[{},{}]",
            events[100..12_000].join(","),
            events[15_000..15_010].join(",")
        );
        assert_eq!(text, want);
        assert_eq!(part.bytes(), want.len() as u64);
        // only the blocks holding a run's ends are compressed again
        let block = segment.blocks[1].raw.end - segment.blocks[1].raw.start;
        assert!(
            again < 4 * block,
            "{again} bytes compressed again, blocks of {block}"
        );
        assert!(again > 0);
    }
}
