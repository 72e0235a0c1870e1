//! The split's copy pass: each (source, part)'s runs copied, on every core, into its place
//! in a plain part, or into a gzip piece of its own made of the source's compressed blocks
//! (only the blocks a cut falls in are compressed again). A source is what one writer
//! wrote: a Chrome segment, or a whole `.pftrace`.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
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

/// What one source gives one part: runs, in order.
pub(crate) struct Unit {
    pub part: usize,
    pub source: usize,
    pub runs: Vec<Run>,
}

/// A stretch of a part.
pub(crate) enum Run {
    /// the source's bytes in this range (before compression)
    Copy(u64, u64),
    /// these bytes (a separator, a packet rewritten)
    Put(Cow<'static, [u8]>),
}

impl Unit {
    /// Its bytes in the part.
    pub fn bytes(&self) -> u64 {
        (self.runs.iter())
            .map(|run| match run {
                Run::Copy(start, end) => end - start,
                Run::Put(bytes) => bytes.len() as u64,
            })
            .sum()
    }

    /// Add the source's bytes `start..end`, after the last run when they follow it.
    pub fn copy(&mut self, start: u64, end: u64) {
        match self.runs.last_mut() {
            Some(Run::Copy(_, last)) if *last == start => *last = end,
            _ => self.runs.push(Run::Copy(start, end)),
        }
    }
}

/// A finished gzip piece (None for a unit written in place).
pub(super) type Written = Option<(File, Checksum)>;

/// Where a unit's gzip piece goes: a file for unit `i`, written from its offset on.
pub(crate) type PieceFile<'a> = &'a (dyn Fn(usize) -> Result<File> + Sync);

/// A piece's file: an unnamed temporary file in `dir`.
pub(crate) fn temporary_in(dir: &Path) -> Result<File> {
    tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))
}

/// Copy every unit's runs, the largest units first, on every core: into its place in its
/// plain part (`plain`: each unit's part file and offset in it), or else into a gzip piece
/// of its own, written into `piece_file(unit)` (bytes compressed again at `level`). The
/// pieces, in the units' order.
pub(crate) fn copy_units(
    units: &[Unit],
    sources: &[Source],
    plain: Option<&[(&File, u64)]>,
    piece_file: PieceFile,
    level: Compression,
) -> Result<Vec<Written>> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(units[*i].bytes()));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let taken = AtomicUsize::new(0);
    let recompressed = AtomicU64::new(0);
    let work = |_| -> Result<Vec<(usize, Written)>> {
        let mut done = Vec::new();
        let mut window = Window::default();
        loop {
            let Some(&i) = order.get(taken.fetch_add(1, Ordering::Relaxed)) else {
                return Ok(done);
            };
            let unit = &units[i];
            let source = &sources[unit.source];
            let written = match plain {
                Some(places) => {
                    let (file, at) = places[i];
                    copy_plain(unit, source, file, at, &mut window)?;
                    None
                }
                None => {
                    let (piece, sum, again) = copy_blocks(unit, source, piece_file(i)?, level)?;
                    recompressed.fetch_add(again, Ordering::Relaxed);
                    Some((piece, sum))
                }
            };
            done.push((i, written));
        }
    };
    let mut written: Vec<Option<Written>> = (0..units.len()).map(|_| None).collect();
    for done in crate::export::on_threads((0..cores).collect(), work) {
        for (i, piece) in done? {
            written[i] = Some(piece);
        }
    }
    if plain.is_none() {
        let total: u64 = sources.iter().map(|s| s.bytes).sum();
        let again = recompressed.into_inner();
        crate::profile::note(&format!(
            "split: {again} of {total} bytes compressed again, in the blocks the cuts fall in"
        ));
    }
    Ok(written.into_iter().map(Option::flatten).collect())
}

/// A unit's runs written at `at` of the plain part `file`.
fn copy_plain(
    unit: &Unit,
    source: &Source,
    file: &File,
    mut at: u64,
    window: &mut Window,
) -> Result<()> {
    window.clear();
    let mut put = |bytes: &[u8]| -> Result<()> {
        file.write_all_at(bytes, at).map_err(Error::Write)?;
        at += bytes.len() as u64;
        Ok(())
    };
    for run in &unit.runs {
        let (start, end) = match run {
            Run::Copy(start, end) => (start, end),
            Run::Put(bytes) => {
                put(bytes)?;
                continue;
            }
        };
        let mut from = *start;
        while from < *end {
            let bytes = window.at(source.file, source.bytes, from, *end)?;
            let len = bytes.len() as u64;
            put(bytes)?;
            from += len;
        }
    }
    Ok(())
}

/// A unit's runs as one gzip piece in `out`, made of its source's blocks: a block the
/// runs cover whole is copied compressed; the bytes of a block they cover in part are
/// inflated and compressed again (at `level`). The piece, its checksum, and the bytes
/// compressed again.
fn copy_blocks(
    unit: &Unit,
    source: &Source,
    out: File,
    level: Compression,
) -> Result<(File, Checksum, u64)> {
    let mut out = PieceOut {
        out: BufWriter::with_capacity(1 << 20, out),
        sum: Checksum::default(),
        fresh: None,
        level,
    };
    let mut again = 0;
    let mut inflated: Option<(usize, Vec<u8>)> = None;
    let mut z = Vec::new();
    let read = |block: &Block, z: &mut Vec<u8>| -> Result<()> {
        z.resize((block.z.end - block.z.start) as usize, 0);
        (source.file.read_exact_at(z, block.z.start)).map_err(Error::Write)
    };
    let blocks = source.blocks;
    for run in &unit.runs {
        let (start, end) = match *run {
            Run::Copy(start, end) => (start, end),
            Run::Put(ref bytes) => {
                out.compress(bytes)?;
                continue;
            }
        };
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
                if inflated.as_ref().is_none_or(|(k, _)| *k != b) {
                    read(block, &mut z)?;
                    let len = (block.raw.end - block.raw.start) as usize;
                    let raw = gzip::inflate_block(&z, len).map_err(Error::Write)?;
                    inflated = Some((b, raw));
                }
                let raw = &inflated.as_ref().expect("inflated above").1;
                out.compress(
                    &raw[(at - block.raw.start) as usize..(to - block.raw.start) as usize],
                )?;
                again += to - at;
            }
            at = to;
            b += 1;
        }
    }
    let (out, sum) = out.finish()?;
    Ok((out, sum, again))
}

/// A gzip piece made of compressed blocks copied as they are and bytes compressed here.
struct PieceOut {
    out: BufWriter<File>,
    sum: Checksum,
    /// the bytes being compressed since the last block copied, as a piece of their own
    fresh: Option<Piece<Vec<u8>>>,
    level: Compression,
}

impl PieceOut {
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

    fn finish(mut self) -> Result<(File, Checksum)> {
        self.end_fresh()?;
        let out = self
            .out
            .into_inner()
            .map_err(|e| Error::Write(e.into_error()))?;
        Ok((out, self.sum))
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
    use std::io::{Seek, SeekFrom};

    #[test]
    fn a_units_gzip_piece_holds_its_runs_and_copies_the_blocks_they_cover_whole() {
        use std::io::Read;
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
        let unit = Unit {
            part: 0,
            source: 0,
            runs: vec![
                Run::Copy(m[100].start, end(11_999)),
                Run::Put(Cow::Borrowed(b",")),
                Run::Copy(m[15_000].start, end(15_009)),
            ],
        };
        let source = Source {
            file: &segment.file,
            bytes: segment.bytes,
            blocks: &segment.blocks,
        };
        let out = tempfile::tempfile().unwrap();
        let (mut piece, sum, again) =
            copy_blocks(&unit, &source, out, Compression::fast()).unwrap();
        let mut gz = gzip::HEADER.to_vec();
        piece.seek(SeekFrom::Start(0)).unwrap();
        piece.read_to_end(&mut gz).unwrap();
        gz.extend_from_slice(&gzip::trailer(&sum));
        let mut text = String::new();
        (flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)).unwrap();
        let want = [
            events[100..12_000].join(","),
            events[15_000..15_010].join(","),
        ]
        .join(",");
        assert_eq!(text, want);
        // only the blocks holding a run's ends are compressed again
        let block = segment.blocks[1].raw.end - segment.blocks[1].raw.start;
        assert!(
            again < 4 * block,
            "{again} bytes compressed again, blocks of {block}"
        );
        assert!(again > 0);
    }
}
