//! A PyTorch profiler (Kineto) trace as one window.
//!
//! ```text
//! scan      : the JSON validator doc parses with
//! doc       : bytes -> top-level members + one raw text per event, classified
//! map       : each event the window takes -> a row of kernel / gpu_memcpy / gpu_memset /
//!             cuda_runtime / cuda_driver / cuda_sync (+ cuda_event) / overhead
//! annotate  : gpu_user_annotation spans -> (correlation, region) links
//! tables    : the Parquet writers; external_correlation, user_annotation, window_info
//! cpu_trace : members + CPU-side events, as written -> cpu_trace.json.gz
//! ```
//!
//! docs/import-kineto.md records every mapping rule.

mod annotate;
mod cpu_trace;
pub mod doc;
mod json;
mod map;
mod scan;
mod tables;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use crate::catalog::cpu_trace::{micros_text_to_ns, parse_int};
use crate::schema::CPU_TRACE_FILE;
use crate::Result;

use doc::Args;
pub use doc::Doc;
use map::{Class, Op, Span};
use tables::{Correlations, Info, Tables};

/// What one trace became.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub runtime_calls: u64,
    pub driver_calls: u64,
    pub syncs: u64,
    pub overheads: u64,
    /// Named user regions (user_annotation rows).
    pub regions: u64,
    /// Events written to the window's CPU trace.
    pub cpu_events: u64,
    /// Events the window could not take, kept in the CPU trace as written: (what, count).
    pub unmapped: Vec<(String, u64)>,
    /// `traceEvents` entries that are not objects of distinct keys (no reader takes them).
    pub dropped: u64,
}

impl ImportStats {
    pub fn api_calls(&self) -> u64 {
        self.runtime_calls + self.driver_calls
    }

    /// One line saying what was kept in the CPU trace only or dropped, or None when
    /// everything mapped.
    pub fn unmapped_line(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.unmapped.is_empty() {
            let kept: Vec<String> = self
                .unmapped
                .iter()
                .map(|(what, n)| format!("{n} {what}"))
                .collect();
            parts.push(format!(
                "kept in the CPU trace only (not in the window's tables): {}",
                kept.join(", ")
            ));
        }
        if self.dropped > 0 {
            parts.push(format!(
                "dropped {} traceEvents entries that are not objects of distinct keys",
                self.dropped
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Write the window of `doc` into the existing, empty directory `dir`.
pub fn write_window(doc: &Doc, dir: &Path, window_id: i64) -> Result<ImportStats> {
    let base = doc.base_ns.unwrap_or(0);
    let mut tables = Tables::new(dir, window_id);
    // Entries no reader takes are left out of the CPU trace too.
    let mut keep: Vec<bool> = doc.classes.iter().map(Option::is_some).collect();
    let dropped = keep.iter().filter(|k| !**k).count() as u64;
    let mut unmapped: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut correlations = Correlations::default();
    let mut ops: Vec<Op> = Vec::new();
    let mut regions: Vec<annotate::Region> = Vec::new();
    let mut region_names: Vec<(i64, String)> = Vec::new();
    let mut api_corr: HashSet<i64> = HashSet::new();
    let mut next_sync_id = 0;
    let mut stage = crate::profile::Clock::start();

    let mut args_buffer = Vec::new();
    for taken in &doc.taken {
        let (i, class, ev) = (taken.index, taken.class, taken.event(doc));
        let start = ev
            .ts
            .and_then(micros_text_to_ns)
            .and_then(|t| t.checked_add(base));
        let dur = ev.dur.and_then(micros_text_to_ns);
        // a time past the i64 nanosecond range is as good as none
        let end = start.zip(dur).and_then(|(s, d)| s.checked_add(d));
        let (Some(start), Some(end)) = (start, end) else {
            *unmapped.entry(missing_time(class)).or_default() += 1;
            continue;
        };
        let span = Span { start, end };
        let args = Args::parse(ev.args, std::mem::take(&mut args_buffer));
        match class {
            Class::Kernel | Class::Memcpy | Class::Memset => {
                let op = match class {
                    Class::Kernel => map::kernel(&mut tables.kernel, &ev, &args, span),
                    Class::Memcpy => map::memcpy(&mut tables.memcpy, &ev, &args, span),
                    _ => map::memset(&mut tables.memset, &ev, &args, span),
                };
                correlations.op(op.correlation, args.external_id());
                ops.push(op);
            }
            Class::Runtime | Class::Driver => {
                let table = if class == Class::Runtime {
                    &mut tables.runtime
                } else {
                    &mut tables.driver
                };
                let Some(correlation) = map::api(table, &ev, &args, span) else {
                    *unmapped.entry(no_cbid(class)).or_default() += 1;
                    continue;
                };
                correlations.api(correlation, args.external_id());
                api_corr.insert(correlation);
            }
            Class::Sync => map::sync(
                &mut tables.sync,
                &mut tables.cuda_event,
                &mut next_sync_id,
                &ev,
                &args,
                span,
            ),
            Class::Overhead => map::overhead(&mut tables.overhead, &ev, span),
            Class::GpuAnnotation => {
                let device = args.int("device").or_else(|| id_int(ev.pid));
                let stream = args.int("stream").or_else(|| id_int(ev.tid));
                let (Some(device), Some(stream), Some(id)) = (device, stream, args.external_id())
                else {
                    *unmapped
                        .entry("gpu_user_annotation spans without device, stream or External id")
                        .or_default() += 1;
                    continue;
                };
                regions.push(annotate::Region {
                    device,
                    stream,
                    span,
                    id,
                });
                region_names.push((id, ev.name.as_deref().unwrap_or("").to_string()));
            }
            Class::Cpu | Class::LaunchFlow { .. } => continue,
        }
        keep[i] = false;
        args_buffer = args.recycle();
    }

    stage.mark("import map");

    // Launch flows whose ends the exporter redraws from the window's correlation ids.
    let op_corr: HashSet<i64> = ops.iter().map(|o| o.correlation).collect();
    for &(i, start, id) in &doc.flows {
        let redrawn = if start {
            api_corr.contains(&id)
        } else {
            op_corr.contains(&id)
        };
        if redrawn && id != 0 {
            keep[i] = false;
        }
    }
    for (correlation, region) in annotate::link(regions, &ops) {
        correlations.user(correlation, region);
    }

    let stats = ImportStats {
        kernels: tables.kernel.rows,
        memcpys: tables.memcpy.rows,
        memsets: tables.memset.rows,
        runtime_calls: tables.runtime.rows,
        driver_calls: tables.driver.rows,
        syncs: tables.sync.rows,
        overheads: tables.overhead.rows,
        regions: 0,
        cpu_events: 0,
        unmapped: unmapped
            .into_iter()
            .map(|(what, n)| (what.to_string(), n))
            .collect(),
        dropped,
    };
    // The CPU trace is compressed on a core of its own while the tables are encoded: the two
    // took 15 and 10 ms one after the other on HTA's 15 k-op test trace.
    let (regions, cpu_events) = std::thread::scope(|scope| {
        let cpu_trace = scope.spawn(|| cpu_trace::write(doc, &keep, &dir.join(CPU_TRACE_FILE)));
        let regions = (|| {
            tables.finish()?;
            correlations.write(dir, window_id)?;
            let names: Vec<(i64, &str)> = region_names
                .iter()
                .map(|(id, n)| (*id, n.as_str()))
                .collect();
            let regions = tables::write_user_annotations(dir, window_id, &names)?;
            tables::write_window_info(
                dir,
                &Info {
                    window_id,
                    start_ns: doc.extent.map(|(first, _)| first.saturating_add(base)),
                    end_ns: doc.extent.map(|(_, last)| last.saturating_add(base)),
                    base_ns: base,
                    cupti_version: doc.member("cupti_version").and_then(parse_int),
                },
            )?;
            Ok::<_, crate::Error>(regions)
        })();
        let cpu_events = cpu_trace
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        Ok::<_, crate::Error>((regions?, cpu_events?))
    })?;
    stage.mark("import tables and cpu_trace");
    Ok(ImportStats {
        regions,
        cpu_events,
        ..stats
    })
}

fn id_int(raw: Option<&str>) -> Option<i64> {
    raw.and_then(parse_int)
}

fn missing_time(class: Class) -> &'static str {
    match class {
        Class::Kernel => "kernel events without ts or dur",
        Class::Memcpy => "gpu_memcpy events without ts or dur",
        Class::Memset => "gpu_memset events without ts or dur",
        Class::Runtime => "cuda_runtime events without ts or dur",
        Class::Driver => "cuda_driver events without ts or dur",
        Class::Sync => "cuda_sync events without ts or dur",
        Class::Overhead => "overhead events without ts or dur",
        _ => "gpu_user_annotation events without ts or dur",
    }
}

fn no_cbid(class: Class) -> &'static str {
    if class == Class::Runtime {
        "cuda_runtime events without cbid"
    } else {
        "cuda_driver events without cbid"
    }
}
