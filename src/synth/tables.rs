//! The set of tables one synthetic window writes, with the columns each feature keeps.

use std::path::Path;

use super::catalog::PM_METRICS;
use super::table::Table;
use super::SynthFeatures;
use crate::schema::ColType;
use crate::Result;

/// Every table of the window; files appear only for tables that get rows.
pub struct Tables {
    pub kernel: Table,
    pub memcpy: Table,
    pub memset: Table,
    pub host_node: Table,
    pub event_node: Table,
    pub runtime: Table,
    pub driver: Table,
    pub overhead: Table,
    pub sync: Table,
    pub event: Table,
    pub ext: Table,
    pub env: Table,
    pub pm: Table,
    pub user_annotation: Table,
    pub thread_resource: Table,
    pub graph_deps: Table,
    pub graph_event_record: Table,
    pub window_info: Table,
}

impl Tables {
    pub fn new(dir: &Path, wid: i64, f: &SynthFeatures) -> Self {
        let with = |base: &[&'static str], extra: &[&'static str]| -> Vec<&'static str> {
            base.iter().chain(extra.iter()).copied().collect()
        };
        let lanes_s: Vec<&'static str> = if f.lanes {
            vec![]
        } else {
            vec!["logical_lane", "lane_name"]
        };
        let kernel_skip = if f.metadata {
            lanes_s.clone()
        } else {
            with(&lanes_s, &["metadata"])
        };
        let metrics: Vec<(&'static str, ColType)> =
            PM_METRICS.iter().map(|m| (*m, ColType::F64)).collect();
        let t = |name: &'static str, skip: &[&'static str]| Table::new(dir, name, wid, skip, &[]);
        Tables {
            kernel: t("kernel", &kernel_skip),
            memcpy: t(
                "gpu_memcpy",
                &with(&lanes_s, &["metadata", "src_device_id", "dst_device_id"]),
            ),
            memset: t("gpu_memset", &with(&lanes_s, &["metadata"])),
            host_node: t("graph_host_node", &lanes_s),
            event_node: t("graph_event_node", &lanes_s),
            runtime: t("cuda_runtime", &["name"]),
            driver: t("cuda_driver", &["name"]),
            overhead: t("overhead", &[]),
            sync: t("cuda_sync", &[]),
            event: t("cuda_event", &["event_id", "graph_node_id", "annotation"]),
            ext: t("external_correlation", &[]),
            env: t("environment", &[]),
            pm: Table::new(dir, "pm_sampling", wid, &[], &metrics),
            user_annotation: t("user_annotation", &[]),
            thread_resource: t("thread_resource", &[]),
            graph_deps: t("graph_deps", &[]),
            graph_event_record: t("graph_event_record", &[]),
            window_info: t("window_info", &[]),
        }
    }

    /// Rows written so far over the activity kinds.
    pub fn activity_rows(&self) -> u64 {
        [
            &self.kernel,
            &self.memcpy,
            &self.memset,
            &self.host_node,
            &self.event_node,
            &self.runtime,
            &self.driver,
            &self.overhead,
            &self.sync,
            &self.event,
            &self.ext,
            &self.env,
            &self.pm,
        ]
        .iter()
        .map(|t| t.rows)
        .sum()
    }

    /// Close every file; rows per table (tables with rows only), activity kinds first.
    pub fn finish(self) -> Result<Vec<(&'static str, u64)>> {
        let all = [
            self.kernel,
            self.memcpy,
            self.memset,
            self.host_node,
            self.event_node,
            self.runtime,
            self.driver,
            self.overhead,
            self.sync,
            self.event,
            self.ext,
            self.env,
            self.pm,
            self.user_annotation,
            self.thread_resource,
            self.graph_deps,
            self.graph_event_record,
            self.window_info,
        ];
        let mut rows = Vec::new();
        for t in all {
            let name = t.name;
            let n = t.finish()?;
            if n > 0 {
                rows.push((name, n));
            }
        }
        Ok(rows)
    }
}
