//! Nsight Systems reports (`nsys export --type sqlite` or `--type parquetdir`) as windows, one
//! per (report, process that did GPU work).
//!
//! ```text
//! source    : the nsys tables and columns the mapping reads (required / optional)
//! load      : .sqlite (rusqlite; parquetdir: a folder of Parquet tables) -> Arrow batches
//!             per source table; an SQLite report's large tables are only checked, then
//!             streamed (feed)
//! register  : tables -> SessionContext under nsys's names, + cbid + sql/import/nsys/ views
//! feed      : a large table as a scan read lazily, in batches, one reader thread per table
//! map       : the processes first, then every view at once, its rows cut per process as
//!             they stream
//! window    : one process's rows -> the window's Parquet tables and window_info
//! cpu_trace : NVTX ranges, thread/process names, GPUs -> cpu_trace.json.gz
//! ```
//!
//! docs/import-nsys.md records every mapping rule.

mod cells;
mod cpu_trace;
mod feed;
pub mod load;
mod map;
mod parquetdir;
mod register;
pub mod source;
mod window;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::arrow::array::{Array, StringArray};

use super::{create_dir, Staging};
use crate::error::Error;
use crate::schema::CPU_TRACE_FILE;
use crate::Result;

/// What to import and where.
#[derive(Clone, Debug)]
pub struct NsysConfig {
    /// Reports: `.sqlite` files or parquetdir folders.
    pub inputs: Vec<PathBuf>,
    /// The window (one report, one GPU process) or archive (more) to create; must not exist.
    pub output: PathBuf,
}

/// What one window got.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NsysStats {
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub runtime_calls: u64,
    pub driver_calls: u64,
    pub syncs: u64,
    pub cuda_events: u64,
    pub overheads: u64,
    /// NVTX ranges written to the CPU trace.
    pub nvtx_ranges: u64,
    /// Events of the CPU trace (ranges and metadata).
    pub cpu_events: u64,
}

/// One imported window.
#[derive(Clone, Debug)]
pub struct NsysWindow {
    pub input: PathBuf,
    /// The window's folder, where it is once the import completes.
    pub window: PathBuf,
    /// The `report=` value (the input's file or folder name without extension).
    pub report: String,
    pub pid: i64,
    pub process_name: Option<String>,
    pub seconds: f64,
    pub stats: NsysStats,
    /// Report-wide warnings, on the report's first window only.
    pub warnings: Vec<String>,
}

/// Import `config.inputs` into `config.output`, calling `on_window` after each window. On any
/// error nothing is left at `config.output` (nor its temporary folder).
pub async fn import_nsys(
    config: &NsysConfig,
    mut on_window: impl FnMut(&NsysWindow),
) -> Result<Vec<NsysWindow>> {
    if config.inputs.is_empty() {
        return Err(Error::Usage("no report to import".into()));
    }
    let staging = Staging::create(&config.output)?;
    let mut next_id: BTreeMap<(String, i64), i64> = BTreeMap::new();
    let mut windows = Vec::new();
    for input in &config.inputs {
        let started = Instant::now();
        let mut stage = crate::profile::Clock::start();
        let report = load::load(input)?;
        stage.mark("nsys load");
        if source::GPU_OPS.iter().all(|t| report.absent.contains(t)) {
            return Err(Error::MissingReportTable {
                file: input.clone(),
                table: source::KERNEL.to_string(),
            });
        }
        let reg = register::context(&report).await?;
        stage.mark("nsys register");
        let side = map::side(&reg).await?;
        let epoch = epoch_ns(&reg.ctx).await?;
        let session_absent = report.absent.contains(&source::SESSION_START);
        stage.mark("nsys map");
        let processes = &side.processes;
        if processes.num_rows() == 0 {
            return Err(Error::BadReport {
                file: input.clone(),
                reason: "no process did GPU work (no kernel, memcpy or memset rows)".into(),
            });
        }
        let archive = config.inputs.len() > 1 || processes.num_rows() > 1;
        let name = report_name(input);
        let gpids = map::ints(processes, "global_pid")?.clone();
        let pids = map::ints(processes, "pid")?.clone();
        let pnames = datafusion::arrow::compute::cast(
            processes
                .column_by_name("name")
                .ok_or_else(|| Error::Internal("nsys_process has no name".into()))?,
            &datafusion::arrow::datatypes::DataType::Utf8,
        )?;
        let pnames = pnames
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| Error::Internal("nsys_process.name is not text".into()))?;
        // Every window of the report is written at once, as the tables stream: in an
        // archive each into window_id=N.tmp inside the staging folder, renamed once whole.
        let mut planned = Vec::new();
        for row in 0..processes.num_rows() {
            let (gpid, pid) = (gpids.value(row), pids.value(row));
            let process_name = (!pnames.is_null(row)).then(|| pnames.value(row).to_string());
            let (dir, final_dir, window_id) = if archive {
                let id = next_id.entry((name.clone(), pid)).or_insert(0);
                *id += 1;
                let rel = Path::new(&format!("report={name}"))
                    .join(format!("process={pid}"))
                    .join(format!("window_id={:06}", *id));
                (staging.tmp.join(&rel), config.output.join(&rel), *id)
            } else {
                (staging.tmp.clone(), config.output.clone(), 1)
            };
            let writing = if archive {
                let tmp = dir.with_extension("tmp");
                create_dir(&tmp)?;
                tmp
            } else {
                dir.clone()
            };
            planned.push((gpid, pid, process_name, dir, final_dir, window_id, writing));
        }
        let targets = planned
            .iter()
            .map(|(gpid, _, _, _, _, window_id, writing)| map::Target {
                global_pid: *gpid,
                dir: writing.clone(),
                window_id: *window_id,
            })
            .collect();
        let streamed = map::stream(&reg, targets).await?;
        // the report's tables are not needed once streamed
        drop(reg);
        drop(report);
        stage.mark("nsys stream");
        let mut warnings = Vec::new();
        if session_absent {
            warnings.push(format!(
                "no {} table: times stay relative to the session start",
                source::SESSION_START
            ));
        }
        if streamed.unknown_api_names > 0 {
            warnings.push(format!(
                "{} API calls have names the cbid table lacks: their cbid is NULL, \
                 cuda_runtime/cuda_driver.name keeps the name",
                streamed.unknown_api_names
            ));
        }
        if streamed.skipped_processes > 0 {
            warnings.push(format!(
                "{} processes made CUDA API calls but did no GPU work: they get no window",
                streamed.skipped_processes
            ));
        }
        for (at, (gpid, pid, process_name, dir, final_dir, window_id, writing)) in
            planned.into_iter().enumerate()
        {
            let written: Vec<map::Written> = streamed.tables.iter().map(|per| per[at]).collect();
            let side = WindowInput {
                side: &side,
                written: &written,
                global_pid: gpid,
                pid,
                process_name: process_name.as_deref(),
                base_ns: epoch,
                trace_name: &format!("{name} pid {pid}"),
            };
            let stats = finish_window(&side, &writing, window_id)?;
            if writing != dir {
                std::fs::rename(&writing, &dir).map_err(|e| Error::io(&dir, e))?;
            }
            let w = NsysWindow {
                input: input.clone(),
                window: final_dir,
                report: name.clone(),
                pid,
                process_name,
                seconds: started.elapsed().as_secs_f64(),
                stats,
                warnings: std::mem::take(&mut warnings),
            };
            stage.mark("nsys window");
            on_window(&w);
            windows.push(w);
        }
    }
    staging.commit()?;
    Ok(windows)
}

/// The report's session start on the Unix clock (0 when unknown).
async fn epoch_ns(ctx: &datafusion::prelude::SessionContext) -> Result<i64> {
    let batches = ctx
        .sql("SELECT epoch_ns FROM nsys_session")
        .await?
        .collect()
        .await?;
    let first = batches.iter().find(|b| b.num_rows() > 0);
    Ok(match first {
        Some(b) => {
            let a = map::ints(b, "epoch_ns")?;
            if a.is_null(0) {
                0
            } else {
                a.value(0)
            }
        }
        None => 0,
    })
}

/// The `report=` value: the file or folder name without its extension, with characters a
/// partition value should not hold replaced by `_`.
fn report_name(input: &Path) -> String {
    let stem = input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "report".into()
    } else {
        clean
    }
}

struct WindowInput<'a> {
    side: &'a map::Side,
    /// Per entry of [`map::MAPPINGS`]: what was written of this window's table.
    written: &'a [map::Written],
    global_pid: i64,
    pid: i64,
    process_name: Option<&'a str>,
    base_ns: i64,
    trace_name: &'a str,
}

/// Complete one process's window in `dir`, whose tables are written: its `window_info`
/// and CPU trace.
fn finish_window(w: &WindowInput<'_>, dir: &Path, window_id: i64) -> Result<NsysStats> {
    let mut stats = NsysStats::default();
    let mut start_ns: Option<i64> = None;
    for (m, written) in map::MAPPINGS.iter().zip(w.written) {
        if let Some(first) = written.first_start {
            start_ns = Some(start_ns.map_or(first, |s: i64| s.min(first)));
        }
        let slot = match m.table {
            "kernel" => &mut stats.kernels,
            "gpu_memcpy" => &mut stats.memcpys,
            "gpu_memset" => &mut stats.memsets,
            "cuda_runtime" => &mut stats.runtime_calls,
            "cuda_driver" => &mut stats.driver_calls,
            "cuda_sync" => &mut stats.syncs,
            "cuda_event" => &mut stats.cuda_events,
            _ => &mut stats.overheads,
        };
        *slot = written.rows;
    }
    window::write_window_info(
        dir,
        &window::Info {
            window_id,
            start_ns: start_ns.unwrap_or(w.base_ns),
            base_ns: w.base_ns,
            cbid_table_version: crate::catalog::CBID_TABLE_VERSION,
        },
    )?;
    let threads = map::of_process(&w.side.threads, w.global_pid)?;
    let nvtx = map::of_process(&w.side.nvtx, w.global_pid)?;
    stats.nvtx_ranges = nvtx.num_rows() as u64;
    stats.cpu_events = cpu_trace::write(
        &cpu_trace::CpuSide {
            pid: w.pid,
            process_name: w.process_name,
            threads: &threads,
            nvtx: &nvtx,
            devices: &w.side.devices,
            base_ns: w.base_ns,
            trace_name: w.trace_name,
        },
        &dir.join(CPU_TRACE_FILE),
    )?;
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_are_safe_partition_values() {
        assert_eq!(report_name(Path::new("a/run 1.sqlite")), "run_1");
        assert_eq!(report_name(Path::new("exports/r=2")), "r_2");
        assert_eq!(report_name(Path::new("/")), "report");
    }
}
