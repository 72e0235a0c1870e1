//! Stage `export`, merged, Perfetto flavour: every window of an archive as one `.pftrace`.
//! Each window is exported alone (its own session, gone before the next starts) into a
//! temporary `.pftrace`, whose packets are then read back one at a time, renamed and shifted
//! ([`rename_packet`]) and appended to the merged trace: so the peak is about one window's.
//!
//! Per window at position `ordinal`: its packets go on a trusted packet sequence of its own
//! (`ordinal * 2^16 + sequence`), which keeps the windows' interned data apart; track uuids
//! are XORed with a per-window constant; pids and tids are renamed as in the Chrome trace ([`merged_pid`]);
//! GPU ids `ordinal * 100 + gpu`; render-stage event ids (and the ids that refer to them)
//! `ordinal * 2^42 + id`; process names, hardware-queue (lane) names and counter names get
//! the window's prefix (`rank 3 · `); timestamps (absolute ns) get the window's offset. A
//! first track, `tracesqlMerge {...}`, records each window's partition and offset.

use std::io::{BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use prost::Message;

use super::align::{self, Offset};
use super::merge::{
    labels, partition_path, select_windows, MergeConfig, MergeSummary, MergedWindow,
};
use super::{export_pftrace, refuse_writing_into_inputs, PftraceConfig};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::chrome::remap::{merged_pid, FLOW_STRIDE};
use crate::sink::perfetto::proto::TracePacket;
use crate::sink::perfetto::{Packets, PftraceWriter};
use crate::window::find_windows;
use crate::Result;

/// GPU ids of window `ordinal` are `ordinal * GPU_STRIDE + gpu`.
pub const GPU_STRIDE: i32 = 100;
/// Sequences of window `ordinal` are `ordinal * SEQUENCE_STRIDE + sequence`.
pub const SEQUENCE_STRIDE: u32 = 1 << 16;

/// How one window's packets are renamed and shifted.
#[derive(Clone, Debug)]
pub struct PacketRemap {
    pub ordinal: u32,
    pub prefix: String,
    /// added to every timestamp, ns
    pub shift_ns: i64,
}

impl PacketRemap {
    /// The XOR mask of the window's track uuids.
    pub fn uuid_mask(&self) -> u64 {
        (u64::from(self.ordinal) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    fn id32(&self, id: i32) -> Result<i32> {
        i32::try_from(merged_pid(self.ordinal, i64::from(id)))
            .map_err(|_| Error::Usage("more than 127 windows to merge into one .pftrace".into()))
    }

    fn tid(&self, tid: i64) -> i64 {
        merged_pid(self.ordinal, tid)
    }

    fn event_id(&self, id: u64) -> u64 {
        u64::from(self.ordinal) * FLOW_STRIDE as u64 + id
    }

    fn gpu(&self, gpu: i32) -> i32 {
        self.ordinal as i32 * GPU_STRIDE + gpu
    }

    fn ts(&self, ts: u64) -> u64 {
        (ts as i64).saturating_add(self.shift_ns) as u64
    }

    fn name(&self, name: &mut Option<String>) {
        if let Some(n) = name {
            *n = format!("{}{n}", self.prefix);
        }
    }
}

/// `packet` of one window renamed and shifted for the merged trace.
pub fn rename_packet(packet: &mut TracePacket, r: &PacketRemap) -> Result<()> {
    if let Some(ts) = &mut packet.timestamp {
        *ts = r.ts(*ts);
    }
    if let Some(seq) = &mut packet.trusted_packet_sequence_id {
        *seq += r.ordinal * SEQUENCE_STRIDE;
    }
    if let Some(snapshot) = &mut packet.clock_snapshot {
        for clock in &mut snapshot.clocks {
            if let Some(ts) = &mut clock.timestamp {
                *ts = r.ts(*ts);
            }
        }
    }
    if let Some(t) = &mut packet.track_descriptor {
        let mask = r.uuid_mask();
        if let Some(uuid) = &mut t.uuid {
            *uuid ^= mask;
        }
        if let Some(parent) = &mut t.parent_uuid {
            *parent ^= mask;
        }
        if let Some(p) = &mut t.process {
            if let Some(pid) = &mut p.pid {
                *pid = r.id32(*pid)?;
            }
            r.name(&mut p.process_name);
        }
        if let Some(thread) = &mut t.thread {
            if let Some(pid) = &mut thread.pid {
                *pid = r.id32(*pid)?;
            }
            if let Some(tid) = &mut thread.tid {
                *tid = r.tid(*tid);
            }
        }
    }
    if let Some(e) = &mut packet.track_event {
        if let Some(uuid) = &mut e.track_uuid {
            *uuid ^= r.uuid_mask();
        }
        if let Some(c) = &mut e.gpu_correlation {
            for id in &mut c.render_stage_submission_event_ids {
                *id = r.event_id(*id);
            }
        }
    }
    if let Some(s) = &mut packet.gpu_render_stage_event {
        if let Some(id) = &mut s.event_id {
            *id = r.event_id(*id);
        }
        for id in &mut s.event_wait_ids {
            *id = r.event_id(*id);
        }
        if let Some(gpu) = &mut s.gpu_id {
            *gpu = r.gpu(*gpu);
        }
    }
    if let Some(i) = &mut packet.interned_data {
        for d in &mut i.gpu_counter_descriptors {
            if let Some(gpu) = &mut d.gpu_id {
                *gpu = r.gpu(*gpu);
            }
            for spec in d.counter_descriptor.iter_mut().flat_map(|c| &mut c.specs) {
                r.name(&mut spec.name);
            }
        }
        for spec in &mut i.gpu_specifications {
            r.name(&mut spec.name);
        }
        for context in &mut i.graphics_contexts {
            if let Some(pid) = &mut context.pid {
                *pid = r.id32(*pid)?;
            }
        }
    }
    Ok(())
}

/// Export every window of the archive at `config.archive` as one `.pftrace`.
pub async fn export_merged_pftrace(
    config: &MergeConfig,
    single: &PftraceConfig,
) -> Result<MergeSummary> {
    refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    write_merged(config, single)
        .await
        .map_err(|e| e.at_output(&config.output))
}

async fn write_merged(config: &MergeConfig, single: &PftraceConfig) -> Result<MergeSummary> {
    let found = find_windows(&config.archive)?;
    let (windows, filter) =
        select_windows(&found.partition_keys, &found.windows, &config.filter).await?;
    if windows.is_empty() {
        return Err(Error::Usage(format!(
            "--where keeps no window of {}",
            config.archive.display()
        )));
    }
    let labels = labels(&windows);
    let partitions: Vec<String> = windows.iter().map(|w| partition_path(w)).collect();
    let offsets = align::offsets(&config.align, &windows, &partitions).await?;
    let out_dir = match config.output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };

    let mut file = AtomicFile::create(&config.output)?;
    let io = |e| Error::io(&config.output, e);
    let out = file.file().try_clone().map_err(io)?;
    let mut w = PftraceWriter::try_new(out, single.compression_level)?;
    let merged: Vec<MergedWindow> = (0..windows.len())
        .map(|i| MergedWindow {
            partition: partitions[i].clone(),
            label: labels[i].clone(),
            offset_ns: offsets[i].offset_ns,
            matched: offsets[i].matched,
            shift_ns: offsets[i].offset_ns,
            events: 0,
            metadata: Vec::new(),
        })
        .collect();
    // The record first: a track named after it, on no sequence.
    let record = super::merge::merge_record(&config.align, &merged).to_string();
    w.packet(|p| {
        p.message(60, |t| {
            t.uint(1, 0x7472_6163_6573_716c); // "tracesql"
            t.bytes(2, format!("tracesqlMerge {record}").as_bytes());
        })
    })
    .map_err(io)?;
    let mut merged = merged;
    for (ordinal, window) in windows.iter().enumerate() {
        let Offset { offset_ns, .. } = offsets[ordinal];
        let part = tempfile::Builder::new()
            .prefix(".tracesql-merge-")
            .suffix(".pftrace")
            .tempfile_in(&out_dir)
            .map_err(|e| Error::io(&out_dir, e))?;
        let mut one = single.clone();
        one.window = window.path.clone();
        one.output = part.path().to_path_buf();
        one.compression_level = 0;
        one.filter = filter.clone();
        export_pftrace(&one).await?;
        let remap = Arc::new(PacketRemap {
            ordinal: ordinal as u32,
            prefix: format!("{} · ", labels[ordinal]),
            shift_ns: offset_ns,
        });
        let before = w.packets();
        copy_packets(part.path(), &remap, &mut w, &config.output)?;
        merged[ordinal].events = w.packets() - before;
        drop(part);
        crate::memory::return_free_memory();
    }
    let bytes = w.uncompressed_bytes();
    w.finish().map_err(io)?;
    file.commit()?;
    Ok(MergeSummary {
        events: merged.iter().map(|w| w.events).sum(),
        bytes: Some(bytes),
        windows: merged,
    })
}

/// The packets of the `.pftrace` at `path`, one at a time, renamed into `w`.
fn copy_packets(
    path: &Path,
    remap: &PacketRemap,
    w: &mut PftraceWriter,
    output: &Path,
) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut input = BufReader::with_capacity(1 << 20, flate2::read::GzDecoder::new(file));
    let bad = |what: &str| Error::Internal(format!("{}: {what}", path.display()));
    let mut buf = Vec::new();
    loop {
        let Some(key) = read_varint(&mut input).map_err(|e| Error::io(path, e))? else {
            return Ok(());
        };
        if key != (1 << 3 | 2) {
            return Err(bad("not a Trace of packets"));
        }
        let len = read_varint(&mut input)
            .map_err(|e| Error::io(path, e))?
            .ok_or_else(|| bad("truncated"))?;
        buf.resize(len as usize, 0);
        input.read_exact(&mut buf).map_err(|e| Error::io(path, e))?;
        let mut packet = TracePacket::decode(&buf[..]).map_err(|e| bad(&e.to_string()))?;
        rename_packet(&mut packet, remap)?;
        w.write(&packet).map_err(|e| Error::io(output, e))?;
    }
}

/// A varint; None at the end of the input (before its first byte).
pub(super) fn read_varint(input: &mut impl Read) -> std::io::Result<Option<u64>> {
    let (mut value, mut shift) = (0u64, 0);
    loop {
        let mut byte = [0u8];
        if input.read(&mut byte)? == 0 {
            return match shift {
                0 => Ok(None),
                _ => Err(std::io::ErrorKind::UnexpectedEof.into()),
            };
        }
        value |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(Some(value));
        }
        shift += 7;
        if shift > 63 {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}
