//! The Parquet tables an imported window gets: one chunked writer per activity kind a Kineto
//! trace can fill, plus the side tables written once the whole trace has been read.

use std::path::Path;

use crate::schema::SCHEMA_VERSION;
use crate::window::writer::{Table, V};
use crate::Result;

/// Kineto's event name, kept as an extra column where the window has no name of its own.
const SOURCE_NAME: &[(&str, crate::schema::ColType)] = &[("name", crate::schema::ColType::Str)];
/// Lane columns: Kineto has no lane resolver.
const NO_LANES: [&str; 2] = ["logical_lane", "lane_name"];

/// The activity tables, filled while the events are read.
pub struct Tables {
    pub kernel: Table,
    pub memcpy: Table,
    pub memset: Table,
    pub runtime: Table,
    pub driver: Table,
    pub sync: Table,
    pub cuda_event: Table,
    pub overhead: Table,
}

impl Tables {
    pub fn new(dir: &Path, window_id: i64) -> Self {
        let memcpy_skip = [NO_LANES[0], NO_LANES[1], "src_device_id", "dst_device_id"];
        Tables {
            kernel: Table::new(dir, "kernel", window_id, &NO_LANES, &[]),
            memcpy: Table::new(dir, "gpu_memcpy", window_id, &memcpy_skip, SOURCE_NAME),
            memset: Table::new(dir, "gpu_memset", window_id, &NO_LANES, SOURCE_NAME),
            // `name` is the API tables' own optional column
            runtime: Table::new(dir, "cuda_runtime", window_id, &[], &[]),
            driver: Table::new(dir, "cuda_driver", window_id, &[], &[]),
            sync: Table::new(dir, "cuda_sync", window_id, &[], &[]),
            cuda_event: Table::new(
                dir,
                "cuda_event",
                window_id,
                &[
                    "event_id",
                    "start_ns",
                    "end_ns",
                    "graph_node_id",
                    "annotation",
                ],
                &[],
            ),
            overhead: Table::new(
                dir,
                "overhead",
                window_id,
                &["correlation_id", "overhead_kind"],
                &[],
            ),
        }
    }

    /// Close every file (tables without rows leave none), each encoded on its own thread.
    pub fn finish(self) -> Result<()> {
        let tables = [
            self.kernel,
            self.memcpy,
            self.memset,
            self.runtime,
            self.driver,
            self.sync,
            self.cuda_event,
            self.overhead,
        ];
        std::thread::scope(|scope| {
            let finishing: Vec<_> = tables
                .into_iter()
                .map(|table| scope.spawn(move || table.finish()))
                .collect();
            for table in finishing {
                table
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            }
            Ok(())
        })
    }
}

/// One `external_correlation` row per correlation id, in first-seen order.
#[derive(Default)]
pub struct Correlations {
    rows: Vec<(i64, Option<i64>, Option<i64>)>,
    index: std::collections::HashMap<i64, usize>,
}

impl Correlations {
    fn slot(&mut self, correlation: i64) -> &mut (i64, Option<i64>, Option<i64>) {
        let next = self.rows.len();
        let at = *self.index.entry(correlation).or_insert(next);
        if at == next {
            self.rows.push((correlation, None, None));
        }
        &mut self.rows[at]
    }

    /// The external id an API call carries (it wins over a GPU op's).
    pub fn api(&mut self, correlation: i64, external_id: Option<i64>) {
        if correlation != 0 && external_id.is_some() {
            self.slot(correlation).1 = external_id;
        }
    }

    /// The external id a GPU op carries, used when no API call gave one.
    pub fn op(&mut self, correlation: i64, external_id: Option<i64>) {
        if correlation != 0 && external_id.is_some() {
            let slot = self.slot(correlation);
            slot.1 = slot.1.or(external_id);
        }
    }

    /// The named user region the correlation's GPU work ran in.
    pub fn user(&mut self, correlation: i64, user_external_id: i64) {
        if correlation != 0 {
            self.slot(correlation).2 = Some(user_external_id);
        }
    }

    pub fn write(&self, dir: &Path, window_id: i64) -> Result<u64> {
        let mut t = Table::new(
            dir,
            "external_correlation",
            window_id,
            &["external_kind"],
            &[],
        );
        for (corr, ext, user) in &self.rows {
            t.push(&[V::N, opt(*ext), V::I(*corr), opt(*user)]);
        }
        t.finish()
    }
}

/// `user_annotation`: one row per region id, first-seen order.
pub fn write_user_annotations(dir: &Path, window_id: i64, rows: &[(i64, &str)]) -> Result<u64> {
    let mut t = Table::new(dir, "user_annotation", window_id, &[], &[]);
    let mut seen = std::collections::HashSet::new();
    for (id, name) in rows {
        if seen.insert(*id) {
            t.push(&[V::I(*id), V::S(name)]);
        }
    }
    t.finish()
}

/// What `window_info` records about an imported trace.
pub struct Info {
    pub window_id: i64,
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
    pub base_ns: i64,
    pub cupti_version: Option<i64>,
}

pub fn write_window_info(dir: &Path, info: &Info) -> Result<u64> {
    let mut t = Table::new(
        dir,
        "window_info",
        info.window_id,
        &["cbid_table_version"],
        &[],
    );
    t.push(&[
        V::I(info.window_id),
        V::I(info.start_ns.unwrap_or(0)),
        opt(info.end_ns),
        V::I(info.base_ns),
        V::S(SCHEMA_VERSION),
        V::S("tracesql import kineto"),
        opt(info.cupti_version),
        V::N,
    ]);
    t.finish()
}

/// A nullable integer cell.
pub fn opt(v: Option<i64>) -> V<'static> {
    v.map_or(V::N, V::I)
}
