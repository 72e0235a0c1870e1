//! Stage `sink`: the Perfetto protobuf (`.pftrace`) writer. In: the content the export
//! decided (tracks, interned tables, slices, render stages, counter samples). Out: a gzip
//! stream of `Trace.packet` records, written packet by packet (a `Trace` is the
//! concatenation of `0x0A, varint length, TracePacket`), so nothing waits for the whole file.

mod packets;
pub mod proto;
mod spread;

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

pub use packets::{
    clock_snapshot, counter_sample, interned, render_stage, slice_begin, slice_end,
    track_descriptor, CounterDescriptor, Interned, RenderStage, Slice, Track,
};
pub use spread::{json_annotations, json_extra_data};

use crate::Result;

/// The sequence id of every sequenced packet (the interning scope).
pub const SEQUENCE_ID: u32 = 1;

/// A streaming `.pftrace` writer: gzip at `level` (0-9) around the packet records.
pub struct PftraceWriter<W: Write> {
    out: GzEncoder<W>,
    buf: Vec<u8>,
    packets: u64,
    bytes: u64,
}

impl<W: Write> PftraceWriter<W> {
    pub fn try_new(writer: W, level: u32) -> Result<Self> {
        Ok(PftraceWriter {
            out: GzEncoder::new(writer, Compression::new(level.min(9))),
            buf: Vec::with_capacity(4096),
            packets: 0,
            bytes: 0,
        })
    }

    /// Append one packet as a `Trace.packet` (field 1) record.
    pub fn write(&mut self, packet: &proto::TracePacket) -> std::io::Result<()> {
        self.buf.clear();
        self.buf.push(0x0A);
        packet
            .encode_length_delimited(&mut self.buf)
            .expect("a Vec grows as needed");
        self.out.write_all(&self.buf)?;
        self.packets += 1;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Uncompressed bytes written so far.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.bytes
    }

    /// Close the gzip stream and return the inner writer.
    pub fn finish(self) -> std::io::Result<W> {
        self.out.finish()
    }
}
