//! Nsight Systems reports (`nsys export --type sqlite` or `--type parquetdir`) as windows, one
//! per (report, process that did GPU work).
//!
//! ```text
//! source    : the nsys tables and columns the mapping reads (required / optional)
//! load      : .sqlite (rusqlite) or parquetdir -> one Arrow batch per source table
//! register  : batches -> SessionContext under nsys's names, + cbid + sql/import/nsys/ views
//! map       : run the views once per report, cut the rows per process
//! window    : one process's rows -> the window's Parquet tables and window_info
//! cpu_trace : NVTX ranges, thread/process names, GPUs -> cpu_trace.json.gz
//! ```
//!
//! docs/import-nsys.md records every mapping rule.

mod cpu_trace;
pub mod load;
mod map;
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
        let ctx = register::context(&report).await?;
        stage.mark("nsys register");
        let mapped = map::run(&ctx).await?;
        let epoch = epoch_ns(&ctx).await?;
        let session_absent = report.absent.contains(&source::SESSION_START);
        // the loaded tables are not needed once mapped
        drop(ctx);
        drop(report);
        stage.mark("nsys map");
        let processes = &mapped.processes;
        if processes.num_rows() == 0 {
            return Err(Error::BadReport {
                file: input.clone(),
                reason: "no process did GPU work (no kernel, memcpy or memset rows)".into(),
            });
        }
        let archive = config.inputs.len() > 1 || processes.num_rows() > 1;
        let mut warnings = Vec::new();
        if session_absent {
            warnings.push(format!(
                "no {} table: times stay relative to the session start",
                source::SESSION_START
            ));
        }
        if mapped.unknown_api_names > 0 {
            warnings.push(format!(
                "{} API calls have names the cbid table lacks: their cbid is NULL, \
                 cuda_runtime/cuda_driver.name keeps the name",
                mapped.unknown_api_names
            ));
        }
        if mapped.skipped_processes > 0 {
            warnings.push(format!(
                "{} processes made CUDA API calls but did no GPU work: they get no window",
                mapped.skipped_processes
            ));
        }
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
            let side = WindowInput {
                mapped: &mapped,
                global_pid: gpid,
                pid,
                process_name: process_name.as_deref(),
                base_ns: epoch,
                trace_name: &format!("{name} pid {pid}"),
            };
            let stats = if archive {
                // window_id=N.tmp inside the staging folder, renamed once whole
                let tmp = dir.with_extension("tmp");
                create_dir(&tmp)?;
                let stats = write_window(&side, &tmp, window_id)?;
                std::fs::rename(&tmp, &dir).map_err(|e| Error::io(&dir, e))?;
                stats
            } else {
                write_window(&side, &dir, window_id)?
            };
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
    mapped: &'a map::Mapped,
    global_pid: i64,
    pid: i64,
    process_name: Option<&'a str>,
    base_ns: i64,
    trace_name: &'a str,
}

/// One process's rows of mapping `m` as its window table: the row count and the earliest
/// start (not of cuda_event).
fn write_mapped(
    m: &map::Mapping,
    batches: &[datafusion::arrow::record_batch::RecordBatch],
    global_pid: i64,
    dir: &Path,
    window_id: i64,
) -> Result<(u64, Option<i64>)> {
    let rows = map::of_process_all(batches, global_pid)?;
    let mut first: Option<i64> = None;
    // cuda_event rows are not cut to the window (their times say nothing of its start)
    for batch in rows.iter().filter(|_| m.table != "cuda_event") {
        if let Some(min) = datafusion::arrow::compute::min(map::ints(batch, "start_ns")?) {
            first = Some(first.map_or(min, |f| f.min(min)));
        }
    }
    Ok((window::write_table(dir, m.table, window_id, &rows)?, first))
}

/// Write one process's window into the existing, empty directory `dir`.
fn write_window(w: &WindowInput<'_>, dir: &Path, window_id: i64) -> Result<NsysStats> {
    let mut stats = NsysStats::default();
    let mut start_ns: Option<i64> = None;
    // The tables are written in parallel, one thread each: Parquet encoding of the two
    // large ones (kernel, cuda_runtime) takes a core apiece.
    let written: Vec<Result<(u64, Option<i64>)>> = std::thread::scope(|s| {
        let tasks: Vec<_> = map::MAPPINGS
            .iter()
            .zip(&w.mapped.tables)
            .map(|(m, batches)| {
                s.spawn(move || write_mapped(m, batches, w.global_pid, dir, window_id))
            })
            .collect();
        tasks
            .into_iter()
            .map(|t| t.join().expect("a table writer panicked"))
            .collect()
    });
    for (m, result) in map::MAPPINGS.iter().zip(written) {
        let (n, first) = result?;
        if let Some(first) = first {
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
        *slot = n;
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
    let threads = map::of_process(&w.mapped.threads, w.global_pid)?;
    let nvtx = map::of_process(&w.mapped.nvtx, w.global_pid)?;
    stats.nvtx_ranges = nvtx.num_rows() as u64;
    stats.cpu_events = cpu_trace::write(
        &cpu_trace::CpuSide {
            pid: w.pid,
            process_name: w.process_name,
            threads: &threads,
            nvtx: &nvtx,
            devices: &w.mapped.devices,
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
