//! One gzip member written in pieces compressed apart, as pigz does: each piece is raw
//! deflate ending on a sync flush (so pieces concatenate into one deflate stream), and the
//! member's CRC32 is the pieces' CRC32s combined. A parallel writer compresses its pieces on
//! as many threads as it likes and still writes one member: some gzip readers (Perfetto's
//! older ones among them) stop after the first member of a multi-member file.
//!
//! A piece can also be cut into blocks ([`Piece::end_block`]) that each inflate alone: a
//! split export copies the blocks that fall whole into one part as they are, compressed,
//! and compresses again only the blocks that a part boundary cuts.

use std::io::{self, Write};
use std::ops::Range;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// A gzip header: deflate, no name, no time, unknown OS (as flate2 writes).
pub const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

/// The CRC32 and length of a piece's uncompressed bytes.
#[derive(Debug, Default)]
pub struct Checksum {
    crc: flate2::Crc,
    len: u64,
}

impl Checksum {
    /// This checksum followed by `next`'s bytes.
    pub fn then(&mut self, next: &Checksum) {
        self.crc.combine(&next.crc);
        self.len += next.len;
    }
}

/// The end of a member whose pieces' bytes have checksum `sum`: a last, empty deflate block,
/// then the CRC32 and the length modulo 2^32.
pub fn trailer(sum: &Checksum) -> Vec<u8> {
    // A final fixed-Huffman block with no symbols but end-of-block.
    let mut out = vec![0x03, 0x00];
    out.extend_from_slice(&sum.crc.sum().to_le_bytes());
    out.extend_from_slice(&(sum.len as u32).to_le_bytes());
    out
}

/// A writer of one piece into `out`; [`Piece::finish`] flushes it to a byte boundary.
pub struct Piece<W: Write> {
    out: W,
    deflate: Compress,
    /// the checksum of the blocks ended so far
    ended: Checksum,
    /// the checksum of the bytes since
    sum: Checksum,
    /// where the block being written starts in the piece's output
    block_z: u64,
    buf: Vec<u8>,
}

/// A stretch of a piece that inflates alone ([`Piece::end_block`]): `raw` is where its
/// uncompressed bytes are among the piece's, `z` where its compressed bytes are in the
/// piece's output, `sum` the checksum of its uncompressed bytes.
#[derive(Debug)]
pub struct Block {
    pub raw: Range<u64>,
    pub z: Range<u64>,
    pub sum: Checksum,
}

/// Compressed bytes are handed to `out` in chunks of this size (flate2's own writers use 32 KiB;
/// one buffer per stretch being encoded).
const CHUNK: usize = 32 << 10;

impl<W: Write> Piece<W> {
    pub fn new(out: W, level: Compression) -> Self {
        Piece {
            out,
            deflate: Compress::new(level, false),
            ended: Checksum::default(),
            sum: Checksum::default(),
            block_z: 0,
            buf: Vec::with_capacity(CHUNK),
        }
    }

    /// Flush the piece to a byte boundary (a sync flush, no final block): its writer and the
    /// checksum of what it took.
    pub fn finish(mut self) -> io::Result<(W, Checksum)> {
        self.compress(&[], FlushCompress::Sync)?;
        self.ended.then(&self.sum);
        Ok((self.out, self.ended))
    }

    /// End a block where the bytes written so far end (the first block starts with the
    /// piece): a full flush, so that what follows refers to nothing before it.
    pub fn end_block(&mut self) -> io::Result<Block> {
        self.compress(&[], FlushCompress::Full)?;
        let z_end = self.deflate.total_out();
        let raw_start = self.ended.len;
        let sum = std::mem::take(&mut self.sum);
        self.ended.then(&sum);
        let block = Block {
            raw: raw_start..self.ended.len,
            z: std::mem::replace(&mut self.block_z, z_end)..z_end,
            sum,
        };
        Ok(block)
    }

    /// Feed `data` to the compressor; with a sync flush, until all its output is out.
    fn compress(&mut self, mut data: &[u8], flush: FlushCompress) -> io::Result<()> {
        loop {
            self.buf.clear();
            let before = self.deflate.total_in();
            let status = self
                .deflate
                .compress_vec(data, &mut self.buf, flush)
                .map_err(io::Error::other)?;
            data = &data[(self.deflate.total_in() - before) as usize..];
            self.out.write_all(&self.buf)?;
            // Room left in the buffer means the compressor had nothing more to give.
            let drained = self.buf.len() < self.buf.capacity() || status == Status::BufError;
            if data.is_empty() && (flush == FlushCompress::None || drained) {
                return Ok(());
            }
        }
    }
}

impl<W: Write> Write for Piece<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.sum.crc.update(data);
        self.sum.len += data.len() as u64;
        self.compress(data, FlushCompress::None)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The uncompressed bytes, `raw_len` of them, of a block whose compressed bytes are `z`.
pub fn inflate_block(z: &[u8], raw_len: usize) -> io::Result<Vec<u8>> {
    let mut inflate = Decompress::new(false);
    // room for one byte more, so that a block longer than told is caught
    let mut raw = Vec::with_capacity(raw_len + 1);
    inflate
        .decompress_vec(z, &mut raw, FlushDecompress::Sync)
        .map_err(io::Error::other)?;
    if raw.len() != raw_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "a gzip block inflates to {} bytes, not {raw_len}",
                raw.len()
            ),
        ));
    }
    Ok(raw)
}

/// `bytes` as one finished piece, in memory.
pub fn piece_of(bytes: &[u8], level: Compression) -> (Vec<u8>, Checksum) {
    let mut piece = Piece::new(Vec::new(), level);
    piece
        .write_all(bytes)
        .expect("writing to a Vec cannot fail");
    piece.finish().expect("writing to a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A member from `parts`, each compressed as a piece of its own.
    fn member(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = HEADER.to_vec();
        let mut sum = Checksum::default();
        for part in parts {
            let (bytes, part_sum) = piece_of(part, Compression::fast());
            out.extend_from_slice(&bytes);
            sum.then(&part_sum);
        }
        out.extend_from_slice(&trailer(&sum));
        out
    }

    #[test]
    fn pieces_make_one_member_that_a_single_member_reader_reads_whole() {
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let parts: [&[u8]; 5] = [b"{\"traceEvents\":[", &big, b",", b"", b"]}"];
        let gz = member(&parts);
        // GzDecoder (not MultiGzDecoder) reads exactly one member and checks its CRC and size.
        let mut decoder = flate2::read::GzDecoder::new(&gz[..]);
        let mut text = Vec::new();
        decoder.read_to_end(&mut text).unwrap();
        assert_eq!(text, parts.concat());
        // Nothing follows the member.
        let mut one = flate2::bufread::GzDecoder::new(&gz[..]);
        io::copy(&mut one, &mut io::sink()).unwrap();
        assert!(one.into_inner().is_empty(), "bytes after the first member");
    }

    #[test]
    fn each_block_inflates_alone_and_the_blocks_make_the_piece() {
        let text: Vec<u8> = (0..400_000u32)
            .flat_map(|i| format!("{},", i % 977).into_bytes())
            .collect();
        let mut piece = Piece::new(Vec::new(), Compression::fast());
        let mut blocks = Vec::new();
        for chunk in text.chunks(100_000) {
            piece.write_all(chunk).unwrap();
            blocks.push(piece.end_block().unwrap());
        }
        let (z, sum) = piece.finish().unwrap();
        // Out of order and alone: a block refers to nothing before it.
        for block in blocks.iter().rev() {
            let bytes = &z[block.z.start as usize..block.z.end as usize];
            let raw = inflate_block(bytes, (block.raw.end - block.raw.start) as usize).unwrap();
            assert_eq!(raw, text[block.raw.start as usize..block.raw.end as usize]);
        }
        assert!(
            inflate_block(&z[blocks[1].z.start as usize..blocks[1].z.end as usize], 10).is_err()
        );
        // The blocks in another order, as one member with their checksums combined.
        let mut gz = HEADER.to_vec();
        let mut combined = Checksum::default();
        for block in [&blocks[2], &blocks[0]] {
            gz.extend_from_slice(&z[block.z.start as usize..block.z.end as usize]);
            combined.then(&block.sum);
        }
        gz.extend_from_slice(&trailer(&combined));
        let mut read = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut read)
            .unwrap();
        let expected = [
            &text[blocks[2].raw.start as usize..blocks[2].raw.end as usize],
            &text[..blocks[0].raw.end as usize],
        ]
        .concat();
        assert_eq!(read, expected);
        assert_eq!(sum.len, text.len() as u64);
    }

    #[test]
    fn a_wrong_checksum_is_caught_by_the_reader() {
        let mut gz = member(&[b"abc", b"def"]);
        let at = gz.len() - 8;
        gz[at] ^= 1;
        let mut text = Vec::new();
        assert!(flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut text)
            .is_err());
    }
}
