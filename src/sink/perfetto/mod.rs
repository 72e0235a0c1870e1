//! Stage `sink`: the Perfetto protobuf (`.pftrace`) writer. In: the content the export
//! decided (tracks, interned tables, slices, render stages, counter samples). Out: a gzip
//! stream of `Trace.packet` records, written packet by packet (a `Trace` is the
//! concatenation of `0x0A, varint length, TracePacket`), so nothing waits for the whole file.
//! A merged trace is several windows' packets in one writer, each window's values renamed
//! and shifted by the packet builders as they encode them ([`PacketRemap`]). A split
//! export's writer is indexed ([`PftraceWriter::indexed`]): it compresses in blocks that
//! each inflate alone and notes every packet ([`PacketIndex`]), for the split to cut.

pub mod index;
mod packets;
pub mod proto;
mod remap;
mod spill;
mod spread;
mod wire;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

pub use index::{PacketIndex, PacketKind, PacketMark};
pub use packets::{
    clock_snapshot, counter_sample, interned, render_stage, slice_begin, slice_end,
    track_descriptor, CounterDescriptor, Interned, Names, RenderStage, Slice, Track,
};
pub use remap::{PacketRemap, GPU_STRIDE, MAX_WINDOWS, SEQUENCE_STRIDE};
pub use spill::PacketSpill;
pub use spread::StageSpread;
pub use wire::Wire;

use crate::file::gzip::{Block, Piece};
use crate::Result;

/// The sequence id of every sequenced packet (the interning scope) of a window's trace (a
/// merged trace puts each window on a sequence of its own: [`PacketRemap::sequence_id`]).
pub const SEQUENCE_ID: u32 = 1;

/// Encoded packets handed to the compressing thread at a time.
const CHUNK: usize = 1 << 20;

/// The bytes of whole packets an indexed writer compresses as one block that inflates
/// alone: a split compresses again only the blocks its cuts fall in (the Chrome writer's
/// figure, [`crate::sink::chrome::index::BLOCK`]).
pub const BLOCK: usize = crate::sink::chrome::index::BLOCK;

/// Where `Trace.packet` records go: the file ([`PftraceWriter`]), or a buffer of packets
/// encoded ahead of their place in the file ([`PacketBuffer`]).
pub trait Packets {
    /// Append one packet whose body `body` encodes, as a `Trace.packet` (field 1) record.
    fn packet(&mut self, body: impl FnOnce(&mut Wire)) -> std::io::Result<()>;
}

/// Packets encoded now and written later with [`PftraceWriter::append`]: what they were
/// made from can go before the packets that must precede them are known.
#[derive(Default)]
pub struct PacketBuffer {
    wire: Wire,
    packets: u64,
    wide: bool,
}

impl Packets for PacketBuffer {
    fn packet(&mut self, body: impl FnOnce(&mut Wire)) -> std::io::Result<()> {
        record(&mut self.wire, &mut self.wide, body);
        self.packets += 1;
        Ok(())
    }
}

/// A streaming `.pftrace` writer: packets are encoded on the caller's thread and gzipped (at
/// `level`, 0-9) on a thread of its own, so the two run side by side.
pub struct PftraceWriter {
    wire: Wire,
    chunks: Option<SyncSender<Vec<u8>>>,
    /// emptied chunks coming back, to be filled again
    spare: Receiver<Vec<u8>>,
    compressor: Option<JoinHandle<io::Result<Option<Indexed>>>>,
    packets: u64,
    bytes: u64,
    wide: bool,
    /// the encoded bytes at which a chunk is handed over
    flush_at: usize,
    /// whether chunks hold whole packets, noted and compressed as blocks
    indexed: bool,
}

/// What an indexed writer wrote: its packets as one gzip piece (raw deflate, no header)
/// from the start of `file`, in `blocks` that each inflate alone and hold whole packets,
/// and each packet's mark.
pub struct Indexed {
    pub file: File,
    /// its uncompressed bytes
    pub bytes: u64,
    pub blocks: Vec<Block>,
    pub index: PacketIndex,
}

/// Append a `Trace.packet` record whose body `body` encodes. `wide`: whether the last
/// record's length took two bytes; packets come in runs of one kind, so the next one's
/// likely does too, and room is kept for it (see [`Wire::message_sized`]).
fn record(wire: &mut Wire, wide: &mut bool, body: impl FnOnce(&mut Wire)) {
    let before = wire.len();
    wire.message_sized(1, if *wide { 2 } else { 1 }, body);
    // A key byte, the length, the body: 131 bytes or more when the length takes two.
    *wide = wire.len() - before >= 3 + 0x80;
}

impl PftraceWriter {
    /// A writer of a gzip stream into `out`.
    pub fn try_new<W: Write + Send + 'static>(out: W, level: u32) -> Result<Self> {
        Self::start(CHUNK, false, move |filled, emptied| {
            let out = BufWriter::with_capacity(CHUNK, out);
            let mut gz = GzEncoder::new(out, Compression::new(level.min(9)));
            for mut chunk in filled {
                gz.write_all(&chunk)?;
                chunk.clear();
                // The writer may be gone already (an error on its side): nothing to reuse.
                let _ = emptied.send(chunk);
            }
            gz.finish()?.flush()?;
            Ok(None)
        })
    }

    /// A writer of an indexed trace into `file` ([`Indexed`]; [`Self::finish_indexed`]).
    pub fn indexed(file: File, level: u32) -> Result<Self> {
        Self::start(BLOCK, true, move |filled, emptied| {
            let out = BufWriter::with_capacity(CHUNK, file);
            let mut piece = Piece::new(out, Compression::new(level.min(9)));
            let (mut blocks, mut index) = (Vec::new(), PacketIndex::default());
            for mut chunk in filled {
                index.note_records(&chunk)?;
                piece.write_all(&chunk)?;
                blocks.push(piece.end_block()?);
                chunk.clear();
                let _ = emptied.send(chunk);
            }
            // each block carries its own checksum, which the parts combine
            let (out, _) = piece.finish()?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            Ok(Some(Indexed {
                file,
                bytes: 0,
                blocks,
                index,
            }))
        })
    }

    /// A writer whose chunks of about `flush_at` bytes `compress` takes on a thread of its
    /// own (and hands back emptied, to be filled again).
    fn start(
        flush_at: usize,
        indexed: bool,
        compress: impl FnOnce(
                Receiver<Vec<u8>>,
                std::sync::mpsc::Sender<Vec<u8>>,
            ) -> io::Result<Option<Indexed>>
            + Send
            + 'static,
    ) -> Result<Self> {
        let (chunks, filled) = sync_channel::<Vec<u8>>(2);
        let (emptied, spare) = channel();
        let compressor = std::thread::Builder::new()
            .name("pftrace-gzip".into())
            .spawn(move || compress(filled, emptied))
            .map_err(|e| crate::error::Error::Internal(format!("cannot start gzip: {e}")))?;
        Ok(PftraceWriter {
            wire: Wire::default(),
            chunks: Some(chunks),
            spare,
            compressor: Some(compressor),
            packets: 0,
            bytes: 0,
            wide: false,
            flush_at,
            indexed,
        })
    }

    /// Append one packet as a `Trace.packet` (field 1) record.
    pub fn write(&mut self, packet: &proto::TracePacket) -> std::io::Result<()> {
        self.packet(|p| packet.encode_raw(&mut p.buf))
    }

    /// Write the packets of `buffer`, in their order.
    pub fn append(&mut self, buffer: PacketBuffer) -> std::io::Result<()> {
        self.packets += buffer.packets;
        self.bytes += buffer.wire.len() as u64;
        let bytes = &buffer.wire.buf[..];
        if !self.indexed {
            for piece in bytes.chunks(CHUNK) {
                self.wire.buf.extend_from_slice(piece);
                if self.wire.len() >= CHUNK {
                    self.hand_over()?;
                }
            }
            return Ok(());
        }
        // An indexed writer's chunks hold whole packets.
        let mut at = 0;
        for len in index::record_lens(bytes) {
            self.wire.buf.extend_from_slice(&bytes[at..at + len]);
            at += len;
            if self.wire.len() >= self.flush_at {
                self.hand_over()?;
            }
        }
        match at == bytes.len() {
            true => Ok(()),
            false => Err(io::Error::other("a packet buffer ends in a broken record")),
        }
    }

    /// Give the encoded packets to the compressing thread and start a new chunk.
    fn hand_over(&mut self) -> std::io::Result<()> {
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + CHUNK / 4));
        let chunk = std::mem::replace(&mut self.wire.buf, next);
        let sent = self.chunks.as_ref().map(|c| c.send(chunk));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: its error says why.
            _ => Err(self
                .join()
                .err()
                .unwrap_or_else(|| io::Error::other("the gzip stream closed early"))),
        }
    }

    /// Wait for the compressing thread and return its outcome.
    fn join(&mut self) -> std::io::Result<Option<Indexed>> {
        self.chunks = None;
        match self.compressor.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the gzip thread panicked")),
            None => Err(std::io::Error::other("the gzip stream is closed")),
        }
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Uncompressed bytes written so far.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.bytes
    }

    /// Write what is left, close the gzip stream and wait until all of it is written.
    pub fn finish(mut self) -> std::io::Result<()> {
        if !self.wire.is_empty() {
            self.hand_over()?;
        }
        self.join().map(drop)
    }

    /// [`Self::finish`] an indexed writer: what it wrote.
    pub fn finish_indexed(mut self) -> std::io::Result<Indexed> {
        if !self.wire.is_empty() {
            self.hand_over()?;
        }
        let bytes = self.bytes;
        match self.join()? {
            Some(indexed) => Ok(Indexed { bytes, ..indexed }),
            None => Err(io::Error::other("the writer is not indexed")),
        }
    }
}

impl Packets for PftraceWriter {
    fn packet(&mut self, body: impl FnOnce(&mut Wire)) -> std::io::Result<()> {
        let before = self.wire.len();
        record(&mut self.wire, &mut self.wide, body);
        self.packets += 1;
        self.bytes += (self.wire.len() - before) as u64;
        if self.wire.len() >= self.flush_at {
            self.hand_over()?;
        }
        Ok(())
    }
}

impl Drop for PftraceWriter {
    /// An abandoned writer (an export that failed) stops its thread.
    fn drop(&mut self) {
        self.chunks = None;
        if let Some(thread) = self.compressor.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::sync::{Arc, Mutex};

    /// A sink shared with the test, failing once `limit` bytes are written.
    #[derive(Clone)]
    struct Shared {
        bytes: Arc<Mutex<Vec<u8>>>,
        limit: usize,
    }

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let mut bytes = self.bytes.lock().unwrap();
            if bytes.len() + buf.len() > self.limit {
                return Err(std::io::Error::other("disk full"));
            }
            bytes.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn write_packets(w: &mut PftraceWriter, n: u64) -> std::io::Result<()> {
        for i in 0..n {
            w.packet(|p| slice_end(p, i as i64, 1 + i % 7, &PacketRemap::NONE))?;
        }
        Ok(())
    }

    #[test]
    fn packets_cross_chunks_and_come_back_whole_from_the_gzip_thread() {
        let out = Shared {
            bytes: Arc::default(),
            limit: usize::MAX,
        };
        let mut w = PftraceWriter::try_new(out.clone(), 1).unwrap();
        // ~15 bytes a record: several chunks.
        write_packets(&mut w, 300_000).unwrap();
        let (packets, raw) = (w.packets(), w.uncompressed_bytes());
        w.finish().unwrap();
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(&out.bytes.lock().unwrap()[..])
            .read_to_end(&mut text)
            .unwrap();
        assert!(raw as usize > 2 * CHUNK);
        assert_eq!((packets, text.len()), (300_000, raw as usize));
        let trace = proto_trace(&text);
        assert_eq!(trace.len(), 300_000);
        assert_eq!(trace[299_999].timestamp, Some(299_999));
    }

    /// Gunzip what `out` holds.
    fn gunzipped(out: &Shared) -> Vec<u8> {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(&out.bytes.lock().unwrap()[..])
            .read_to_end(&mut text)
            .unwrap();
        text
    }

    #[test]
    fn buffered_packets_are_written_as_if_written_in_their_place() {
        let (direct, later) = (
            Shared {
                bytes: Arc::default(),
                limit: usize::MAX,
            },
            Shared {
                bytes: Arc::default(),
                limit: usize::MAX,
            },
        );
        let mut w = PftraceWriter::try_new(direct.clone(), 1).unwrap();
        write_packets(&mut w, 200_000).unwrap();
        w.packet(|p| slice_end(p, -1, 99, &PacketRemap::NONE))
            .unwrap();
        let direct_counts = (w.packets(), w.uncompressed_bytes());
        w.finish().unwrap();

        // The first 200 000 packets (several chunks) encoded ahead, one written after them.
        let mut buffer = PacketBuffer::default();
        for i in 0..200_000u64 {
            buffer
                .packet(|p| slice_end(p, i as i64, 1 + i % 7, &PacketRemap::NONE))
                .unwrap();
        }
        let mut w = PftraceWriter::try_new(later.clone(), 1).unwrap();
        w.append(buffer).unwrap();
        w.packet(|p| slice_end(p, -1, 99, &PacketRemap::NONE))
            .unwrap();
        assert_eq!((w.packets(), w.uncompressed_bytes()), direct_counts);
        w.finish().unwrap();
        assert!(direct_counts.1 as usize > 2 * CHUNK);
        assert!(gunzipped(&later) == gunzipped(&direct));
    }

    #[test]
    fn an_indexed_writer_notes_every_packet_in_blocks_of_whole_packets_that_inflate_alone() {
        use std::os::unix::fs::FileExt;
        let direct = Shared {
            bytes: Arc::default(),
            limit: usize::MAX,
        };
        let mut w = PftraceWriter::try_new(direct.clone(), 1).unwrap();
        let mut x = PftraceWriter::indexed(tempfile::tempfile().unwrap(), 1).unwrap();
        let mut buffer = PacketBuffer::default();
        write_packets(&mut w, 100_000).unwrap();
        write_packets(&mut x, 50_000).unwrap();
        for i in 50_000..100_000u64 {
            (buffer.packet(|p| slice_end(p, i as i64, 1 + i % 7, &PacketRemap::NONE))).unwrap();
        }
        x.append(buffer).unwrap();
        assert_eq!(
            (x.packets(), x.uncompressed_bytes()),
            (w.packets(), w.uncompressed_bytes())
        );
        w.finish().unwrap();
        let trace = x.finish_indexed().unwrap();
        let text = gunzipped(&direct);
        assert_eq!(trace.bytes, text.len() as u64);
        assert!(trace.blocks.len() > 4, "{} blocks", trace.blocks.len());
        // each packet noted, with its record's bytes
        let marks = &trace.index.marks;
        assert_eq!(marks.len(), 100_000);
        assert_eq!(marks[70_001].ts, 70_001);
        assert_eq!(marks[70_001].kind, PacketKind::End(1 + 70_001 % 7));
        let ends: Vec<u64> = (marks.iter())
            .scan(0, |at, m| {
                *at += u64::from(m.len);
                Some(*at)
            })
            .collect();
        assert_eq!(ends.last(), Some(&trace.bytes));
        for block in &trace.blocks {
            assert!(
                ends.binary_search(&block.raw.end).is_ok(),
                "a block ends inside a packet"
            );
            let mut z = vec![0; (block.z.end - block.z.start) as usize];
            trace.file.read_exact_at(&mut z, block.z.start).unwrap();
            let len = (block.raw.end - block.raw.start) as usize;
            let raw = crate::file::gzip::inflate_block(&z, len).unwrap();
            assert!(raw[..] == text[block.raw.start as usize..block.raw.end as usize]);
        }
    }

    #[test]
    fn a_failed_write_on_the_gzip_thread_is_the_writers_error() {
        let out = Shared {
            bytes: Arc::default(),
            limit: 1000,
        };
        let mut w = PftraceWriter::try_new(out, 0).unwrap();
        let written = write_packets(&mut w, 300_000);
        let finished = match written {
            Ok(()) => w.finish(),
            Err(e) => Err(e),
        };
        assert_eq!(finished.unwrap_err().to_string(), "disk full");
    }

    /// The packets of a `Trace`, decoded by prost.
    fn proto_trace(bytes: &[u8]) -> Vec<proto::TracePacket> {
        #[derive(Clone, PartialEq, prost::Message)]
        struct Trace {
            #[prost(message, repeated, tag = "1")]
            packet: Vec<proto::TracePacket>,
        }
        Trace::decode(bytes).unwrap().packet
    }
}
