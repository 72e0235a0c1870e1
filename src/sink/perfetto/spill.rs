//! Packets encoded long before their turn, kept on disk until then: an export encodes its
//! CPU slices first (so that the CPU trace's text can go), but they follow the interned
//! data, which is known only once every later stage has interned its names. Held in memory,
//! the CPU slices' packets were ~290 MB of a 10 M-event export's peak (1653-1664 MB; 1466-1473
//! MB spilled, the same trace; no slower at 1 M events, 5 interleaved runs).
//!
//! The file has no name (it goes when it is closed, Ctrl-C included) and lives beside the
//! output, on the disk the output is written to (`/tmp` may be memory).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::{index, PacketBuffer, PftraceWriter};

/// Whole packets are read back in pieces of about this many bytes.
const PIECE: usize = 8 << 20;

/// Encoded packets on disk, in pieces of whole packets (their bytes and packet counts).
pub struct PacketSpill {
    file: File,
    pieces: Vec<(usize, u64)>,
}

impl PacketSpill {
    /// An empty spill in `dir`.
    pub fn new_in(dir: &Path) -> io::Result<PacketSpill> {
        Ok(PacketSpill {
            file: tempfile::tempfile_in(dir)?,
            pieces: Vec::new(),
        })
    }

    /// Append `buffer`'s packets, after those already spilled.
    pub fn push(&mut self, buffer: PacketBuffer) -> io::Result<()> {
        let bytes = &buffer.wire.buf[..];
        let (mut start, mut at, mut packets) = (0, 0, 0);
        for len in index::record_lens(bytes) {
            if at + len - start > PIECE && at > start {
                self.pieces.push((at - start, packets));
                (start, packets) = (at, 0);
            }
            at += len;
            packets += 1;
        }
        if at != bytes.len() {
            return Err(io::Error::other("a packet buffer ends in a broken record"));
        }
        if at > start {
            self.pieces.push((at - start, packets));
        }
        self.file.write_all(bytes)
    }

    /// Write every spilled packet into `w`, in order.
    pub fn write_into(mut self, w: &mut PftraceWriter) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(0))?;
        for (len, packets) in self.pieces {
            let mut buffer = PacketBuffer::default();
            buffer.wire.buf.resize(len, 0);
            self.file.read_exact(&mut buffer.wire.buf)?;
            buffer.packets = packets;
            w.append(buffer)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::perfetto::Packets;

    /// Packets of growing sizes, some larger than a piece.
    fn buffer(sizes: &[usize]) -> PacketBuffer {
        let mut buffer = PacketBuffer::default();
        for (k, size) in sizes.iter().enumerate() {
            let body = vec![k as u8; *size];
            buffer
                .packet(|p| p.buf.extend_from_slice(&body))
                .expect("a buffer takes any packet");
        }
        buffer
    }

    fn written(buffers: Vec<PacketBuffer>, spill: bool) -> (Vec<u8>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pftrace");
        let mut w = PftraceWriter::try_new(File::create(&path).unwrap(), 1).unwrap();
        if spill {
            let mut spilled = PacketSpill::new_in(dir.path()).unwrap();
            for b in buffers {
                spilled.push(b).unwrap();
            }
            spilled.write_into(&mut w).unwrap();
        } else {
            for b in buffers {
                w.append(b).unwrap();
            }
        }
        let packets = w.packets();
        w.finish().unwrap();
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(File::open(&path).unwrap())
            .read_to_end(&mut text)
            .unwrap();
        (text, packets)
    }

    #[test]
    fn spilled_packets_are_written_as_if_appended() {
        let sizes = [
            [10, PIECE + 5, 3, 200].as_slice(),
            &[PIECE / 2, PIECE / 2 + 1, 7],
            &[],
        ];
        let make = || sizes.iter().map(|s| buffer(s)).collect::<Vec<_>>();
        let (appended, n) = written(make(), false);
        let (spilled, m) = written(make(), true);
        assert_eq!(n, 7);
        assert_eq!(m, n);
        assert!(appended == spilled, "the spilled trace differs");
    }
}
