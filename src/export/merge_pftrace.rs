//! Stage `export`, merged, Perfetto flavour: every window of an archive as one `.pftrace`.
//! The windows are exported one after another into one [`PftraceWriter`], each in a session
//! of its own (gone before the next starts: the peak is about one window's), each window's
//! packets renamed and shifted as they are encoded ([`PacketRemap`]: its own trusted packet
//! sequence, track uuids, pids and tids, GPU ids, render-stage event ids, name prefixes
//! `rank 3 · `, the window's time offset; `src/sink/perfetto/remap.rs` and
//! docs/export-merge.md list them). A first track, `tracesqlMerge {...}`, records each
//! window's partition and offset.

use super::align::{self, Offset};
use super::merge::{
    labels, partition_path, select_windows, MergeConfig, MergeSummary, MergedWindow,
};
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
    let (windows, filter) =
        select_windows(&found.partition_keys, &found.windows, &config.filter).await?;
    if windows.is_empty() {
        return Err(Error::Usage(format!(
            "--where keeps no window of {}",
            config.archive.display()
        )));
    }
    if windows.len() > MAX_WINDOWS {
        return Err(Error::Usage(format!(
            "{} windows: at most {MAX_WINDOWS} merge into one .pftrace (--where picks some)",
            windows.len()
        )));
    }
    let labels = labels(&windows);
    let partitions: Vec<String> = windows.iter().map(|w| partition_path(w)).collect();
    let offsets = align::offsets(&config.align, &windows, &partitions).await?;

    let io = |e| Error::io(&config.output, e);
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
        let remap =
            PacketRemap::window(ordinal as u32, format!("{} · ", labels[ordinal]), offset_ns)?;
        let mut one = single.clone();
        one.window = window.path.clone();
        one.output = config.output.clone();
        one.filter = filter.clone();
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
