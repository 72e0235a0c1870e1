//! Stage `sink`: the Perfetto protobuf (`.pftrace`) writer. In: the content the export
//! decided (tracks, interned tables, slices, render stages, counter samples). Out: a gzip
//! stream of `Trace.packet` records, written packet by packet (a `Trace` is the
//! concatenation of `0x0A, varint length, TracePacket`), so nothing waits for the whole file.

mod packets;
pub mod proto;
mod spread;
mod wire;

use std::io::{BufWriter, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

pub use packets::{
    clock_snapshot, counter_sample, interned, render_stage, slice_begin, slice_end,
    track_descriptor, CounterDescriptor, Interned, RenderStage, Slice, Track,
};
pub use wire::Wire;

use crate::Result;

/// The sequence id of every sequenced packet (the interning scope).
pub const SEQUENCE_ID: u32 = 1;

/// Encoded packets handed to the compressing thread at a time.
const CHUNK: usize = 1 << 20;

/// A streaming `.pftrace` writer: packets are encoded on the caller's thread and gzipped (at
/// `level`, 0-9) on a thread of its own, so the two run side by side.
pub struct PftraceWriter {
    wire: Wire,
    chunks: Option<SyncSender<Vec<u8>>>,
    /// emptied chunks coming back, to be filled again
    spare: Receiver<Vec<u8>>,
    compressor: Option<JoinHandle<std::io::Result<()>>>,
    packets: u64,
    bytes: u64,
}

impl PftraceWriter {
    pub fn try_new<W: Write + Send + 'static>(out: W, level: u32) -> Result<Self> {
        let (chunks, filled) = sync_channel::<Vec<u8>>(2);
        let (emptied, spare) = channel();
        let compressor = std::thread::Builder::new()
            .name("pftrace-gzip".into())
            .spawn(move || {
                let out = BufWriter::with_capacity(CHUNK, out);
                let mut gz = GzEncoder::new(out, Compression::new(level.min(9)));
                for mut chunk in filled {
                    gz.write_all(&chunk)?;
                    chunk.clear();
                    // The writer may be gone already (an error on its side): nothing to reuse.
                    let _ = emptied.send(chunk);
                }
                gz.finish()?.flush()
            })
            .map_err(|e| crate::error::Error::Internal(format!("cannot start gzip: {e}")))?;
        Ok(PftraceWriter {
            wire: Wire::default(),
            chunks: Some(chunks),
            spare,
            compressor: Some(compressor),
            packets: 0,
            bytes: 0,
        })
    }

    /// Append one packet as a `Trace.packet` (field 1) record.
    pub fn write(&mut self, packet: &proto::TracePacket) -> std::io::Result<()> {
        self.packet(|p| packet.encode_raw(&mut p.buf))
    }

    /// Append one packet whose body `body` encodes, as a `Trace.packet` (field 1) record.
    pub fn packet(&mut self, body: impl FnOnce(&mut Wire)) -> std::io::Result<()> {
        let before = self.wire.len();
        self.wire.message(1, body);
        self.packets += 1;
        self.bytes += (self.wire.len() - before) as u64;
        if self.wire.len() >= CHUNK {
            self.hand_over()?;
        }
        Ok(())
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
                .unwrap_or_else(|| std::io::Error::other("the gzip stream closed early"))),
        }
    }

    /// Wait for the compressing thread and return its outcome.
    fn join(&mut self) -> std::io::Result<()> {
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
        self.join()
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
