//! Stage `export`, merged, Perfetto flavour: every window of an archive as one `.pftrace`.
//! The windows are exported one after another into one [`PftraceWriter`], each in a session
//! of its own (gone before the next starts: the peak is about one window's), each window's
//! packets renamed and shifted as they are encoded ([`PacketRemap`]: its own trusted packet
//! sequence, track uuids, pids and tids, GPU ids, render-stage event ids, name prefixes
//! `rank 3 · `, the window's time offset; `src/sink/perfetto/remap.rs` and
//! docs/export-merge.md list them). A first track, `tracesqlMerge {...}`, records each
//! window's partition and offset.

use std::path::Path;

use super::merge::{partition_path, pieces, MergeConfig, MergeSummary, MergedWindow, Piece};
use super::pftrace::write_window;
use super::{refuse_writing_into_inputs, PftraceConfig};
use crate::error::Error;
use crate::file::AtomicFile;
use crate::sink::perfetto::{PacketRemap, Packets, PftraceWriter, MAX_WINDOWS};
use crate::window::find_windows;
use crate::Result;

/// Export every window of the archive at `config.archive` as one `.pftrace`.
pub async fn export_merged_pftrace(
    config: &MergeConfig,
    single: &PftraceConfig,
) -> Result<MergeSummary> {
    refuse_writing_into_inputs(&config.archive, &config.output, &config.filter)?;
    let written = async {
        let mut file = AtomicFile::create(&config.output)?;
        let io = |e| Error::io(&config.output, e);
        let out = file.file().try_clone().map_err(io)?;
        let mut w = PftraceWriter::try_new(out, single.compression_level)?;
        let summary = write_merged(config, single, &mut w).await?;
        w.finish().map_err(io)?;
        file.commit()?;
        Ok(summary)
    };
    written
        .await
        .map_err(|e: Error| e.at_output(&config.output))
}

/// The windows of the archive at `config.archive`, merged, written into `w`.
pub(crate) async fn write_merged(
    config: &MergeConfig,
    single: &PftraceConfig,
    w: &mut PftraceWriter,
) -> Result<MergeSummary> {
    let found = find_windows(&config.archive)?;
    let pieces = pieces(config, &found).await?;
    write_pieces(&pieces, &config.align.name(), single, &config.output, w).await
}

/// `pieces` merged into `w`, each exported with `single`'s settings; `align` names how their
/// clocks were put on one timeline (the merge record's).
pub(crate) async fn write_pieces(
    pieces: &[Piece],
    align: &str,
    single: &PftraceConfig,
    output: &Path,
    w: &mut PftraceWriter,
) -> Result<MergeSummary> {
    if pieces.len() > MAX_WINDOWS {
        return Err(Error::Usage(format!(
            "{} windows: at most {MAX_WINDOWS} merge into one .pftrace (--where picks some)",
            pieces.len()
        )));
    }
    let io = |e| Error::io(output, e);
    let mut merged: Vec<MergedWindow> = (pieces.iter())
        .map(|piece| MergedWindow {
            partition: partition_path(&piece.window),
            label: piece.label.clone(),
            offset_ns: piece.offset.offset_ns,
            matched: piece.offset.matched,
            shift_ns: piece.offset.offset_ns,
            events: 0,
            metadata: Vec::new(),
        })
        .collect();
    // The record first: a track named after it, on no sequence.
    let record = super::merge::merge_record(align, &merged).to_string();
    w.packet(|p| {
        p.message(60, |t| {
            t.uint(1, 0x7472_6163_6573_716c); // "tracesql"
            t.bytes(2, format!("tracesqlMerge {record}").as_bytes());
        })
    })
    .map_err(io)?;
    for (ordinal, piece) in pieces.iter().enumerate() {
        let prefix = format!("{} · ", piece.label);
        let remap = PacketRemap::window(ordinal as u32, prefix, piece.offset.offset_ns)?;
        let mut one = single.clone();
        one.window = piece.window.path.clone();
        one.output = output.to_path_buf();
        one.filter = piece.filter.clone();
        let before = w.packets();
        write_window(&one, w, &remap).await?;
        merged[ordinal].events = w.packets() - before;
        crate::memory::return_free_memory();
    }
    Ok(MergeSummary {
        events: merged.iter().map(|w| w.events).sum(),
        bytes: Some(w.uncompressed_bytes()),
        windows: merged,
    })
}
