//! Stage `sql`: the `.sql` files under `sql/`, compiled into the binary through one ordered
//! registry, and their registration in a catalog.
//!
//! The files are plain DataFusion SQL with a few placeholders, so one text serves a single
//! window and an archive (where every table gains partition columns such as `window_id`):
//! - `{{part}}` / `{{part t}}`: the partition columns (qualified by `t`), each followed by a
//!   comma; nothing for a single window;
//! - `{{same_window a b}}`: `AND a.k = b.k` for every partition column; nothing for a
//!   single window, so joins never pair rows of different windows;
//! - `{{group_by_part}}` / `{{partition_by_part}}` / `{{partition_by_part t}}`: `GROUP BY` /
//!   `PARTITION BY` the partition columns (qualified by `t`); nothing for a single window (for
//!   one row, or one window frame, per window);
//! - `{{pair}}` / `{{pair t}}` / `{{same_pair a b}}` / `{{group_by_pair}}` /
//!   `{{partition_by_pair}}`: as the `part` ones, over the partition columns but `window_id`
//!   (a diff pairs the runs' ranks, not their window numbers; see `diff`);
//! - `{{coalesce_part a b}}`: `COALESCE(a.k, b.k) AS k, ` for every partition column (the key
//!   of a full join's row);
//! - `{{param NAME}}`: a report parameter's value (reports only, see `report`);
//! - `{{file_row}}` / `{{file_row t}}`: `file_row, ` (qualified by `t`), each row's place in
//!   its table's file, where the catalog's scans count it (the export's:
//!   [`crate::catalog::file_order`], see [`register_views_in_file_order`]); nothing elsewhere.

use datafusion::prelude::SessionContext;

use crate::error::Error;
use crate::Result;

/// One SQL object: a file under `sql/` that defines the object it is named after.
#[derive(Debug)]
pub struct SqlObject {
    /// Object name, equal to the file stem.
    pub name: &'static str,
    /// Path relative to `sql/`.
    pub path: &'static str,
    pub text: &'static str,
}

impl SqlObject {
    /// The query of a file that defines a view (`CREATE OR REPLACE VIEW name AS query`), for
    /// registering its rows as something other than a view.
    pub fn query(&self) -> Result<&'static str> {
        self.query_of(self.text)
    }

    /// The query of `text`, this file's text with its placeholders expanded.
    fn query_of<'a>(&self, text: &'a str) -> Result<&'a str> {
        let head = format!("CREATE OR REPLACE VIEW {} AS", self.name);
        let at = text.find(&head).ok_or_else(|| {
            Error::Internal(format!("sql/{}: does not start `{head}`", self.path))
        })?;
        Ok(&text[at + head.len()..])
    }
}

macro_rules! sql_object {
    ($dir:literal, $name:literal) => {
        SqlObject {
            name: $name,
            path: concat!($dir, "/", $name, ".sql"),
            text: include_str!(concat!("../sql/", $dir, "/", $name, ".sql")),
        }
    };
}

/// Public views, in dependency order.
pub static VIEWS: &[SqlObject] = &[
    sql_object!("views", "api_call"),
    sql_object!("views", "gpu_op"),
    sql_object!("views", "launch"),
    sql_object!("views", "cpu_launch"),
    sql_object!("views", "graph_edge"),
    sql_object!("views", "gpu_op_clamped"),
    sql_object!("views", "annotation_call"),
];

/// The export plans (`sql/export/`: `chrome_*` for the Chrome JSON, `pftrace_*` for the
/// Perfetto protobuf), every file of the folder, in dependency order (listed by `build.rs`:
/// adding a plan is adding its file); one window only, so
/// they use no partition placeholders. They read `chrome_base`, `chrome_pm_sample` and the
/// export functions, which the export's session provides.
pub static EXPORT: &[SqlObject] = include!(concat!(env!("OUT_DIR"), "/export_objects.rs"));

/// The mapping of Nsight Systems reports (`sql/import/nsys/`, written against nsys's own
/// table and column names), in dependency order; `import::nsys` registers them in a context
/// of the report's tables, not in a window's catalog.
pub static IMPORT_NSYS: &[SqlObject] = &[
    sql_object!("import/nsys", "nsys_session"),
    sql_object!("import/nsys", "_nsys_enum"),
    sql_object!("import/nsys", "nsys_process"),
    sql_object!("import/nsys", "nsys_kernel"),
    sql_object!("import/nsys", "nsys_gpu_memcpy"),
    sql_object!("import/nsys", "nsys_gpu_memset"),
    sql_object!("import/nsys", "_nsys_api"),
    sql_object!("import/nsys", "_nsys_api_call"),
    sql_object!("import/nsys", "nsys_cuda_runtime"),
    sql_object!("import/nsys", "nsys_cuda_driver"),
    sql_object!("import/nsys", "nsys_cuda_sync"),
    sql_object!("import/nsys", "nsys_cuda_event"),
    sql_object!("import/nsys", "nsys_overhead"),
    sql_object!("import/nsys", "nsys_nvtx"),
    sql_object!("import/nsys", "nsys_thread"),
    sql_object!("import/nsys", "nsys_device"),
];

/// The reports (`sql/reports/`): `_` helpers first (views the reports share, created when a
/// report runs), then one query per report, each opening with its `-- @report` header.
pub static REPORTS: &[SqlObject] = &[
    sql_object!("reports", "_hta_gpu_op"),
    sql_object!("reports", "_hta_merged"),
    sql_object!("reports", "_hta_kernel_state"),
    sql_object!("reports", "_queue_step"),
    sql_object!("reports", "_cp_cpu_event"),
    sql_object!("reports", "_cp_gpu_op"),
    sql_object!("reports", "kernel_summary"),
    sql_object!("reports", "kernel_shape_summary"),
    sql_object!("reports", "api_summary"),
    sql_object!("reports", "memcpy_summary"),
    sql_object!("reports", "gpu_gaps"),
    sql_object!("reports", "gpu_utilization"),
    sql_object!("reports", "temporal_breakdown"),
    sql_object!("reports", "idle_breakdown"),
    sql_object!("reports", "kernel_breakdown"),
    sql_object!("reports", "comm_overlap"),
    sql_object!("reports", "launch_stats"),
    sql_object!("reports", "queue_length"),
    sql_object!("reports", "queue_length_summary"),
    sql_object!("reports", "annotation_gpu_time"),
    sql_object!("reports", "top_ops"),
    sql_object!("reports", "critical_path"),
    sql_object!("reports", "critical_path_summary"),
];

/// Scripts the reports include (`{{include NAME}}`, see `report`): statements that compute a
/// report's stages into tables, each planned once, before the report's query reads them.
pub static SCRIPTS: &[SqlObject] = &[sql_object!("scripts", "critical_path_graph")];

/// A diff's per-run helpers (`sql/diff/run/`), in dependency order: created over the union
/// of both runs (`run` is 'base' or 'new', the first partition column), see `diff`.
pub static DIFF_RUN: &[SqlObject] = &[
    sql_object!("diff/run", "_diff_step"),
    sql_object!("diff/run", "_diff_call_op"),
    sql_object!("diff/run", "_diff_gpu_work"),
];

/// A diff's views (`sql/diff/`), in dependency order: the runs side by side, their partition
/// placeholders expanded for the pairing keys (rank, host, ...; not `run`, not `window_id`).
pub static DIFF: &[SqlObject] = &[
    sql_object!("diff", "diff_gpu_op"),
    sql_object!("diff", "diff_step"),
    sql_object!("diff", "diff_summary"),
    sql_object!("diff", "diff_by"),
];

/// The data-quality checks (`sql/doctor/`, each a view of the offending rows with a
/// `-- @check` header, whose first row in column order is the example; `_` files are their
/// helpers), in dependency order; `doctor::register` creates them over a catalog, partition
/// placeholders expanded.
pub static DOCTOR: &[SqlObject] = &[
    sql_object!("doctor", "_unlaunched_gpu_op"),
    sql_object!("doctor", "duplicate_correlation_id"),
    sql_object!("doctor", "negative_duration"),
    sql_object!("doctor", "clock_domain_gap"),
    sql_object!("doctor", "gpu_op_without_launch"),
    sql_object!("doctor", "launch_without_gpu_op"),
    sql_object!("doctor", "op_outside_window"),
    sql_object!("doctor", "stream_overlap"),
    sql_object!("doctor", "zero_duration"),
    sql_object!("doctor", "unknown_cbid"),
    sql_object!("doctor", "external_id_without_cpu_op"),
    sql_object!("doctor", "cpu_trace_missing"),
    sql_object!("doctor", "cpu_trace_without_base"),
    sql_object!("doctor", "graph_op_without_launch"),
    sql_object!("doctor", "row_order_unclaimed"),
];

/// Every registered SQL object.
pub fn all_objects() -> impl Iterator<Item = &'static SqlObject> {
    VIEWS
        .iter()
        .chain(EXPORT.iter())
        .chain(IMPORT_NSYS.iter())
        .chain(REPORTS.iter())
        .chain(SCRIPTS.iter())
        .chain(DIFF_RUN.iter())
        .chain(DIFF.iter())
        .chain(DOCTOR.iter())
}

/// `text` with its placeholders expanded for the partition columns `partitions`.
pub fn expand(text: &str, partitions: &[String]) -> Result<String> {
    expand_with(text, partitions, &|_| None)
}

/// [`expand`], with `{{param NAME}}` taking `param(NAME)` (an unknown name is an error).
pub fn expand_with(
    text: &str,
    partitions: &[String],
    param: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    expand_all(text, partitions, false, param)
}

/// [`expand_with`]; `file_row`: the catalog's tables have the `file_row` column.
fn expand_all(
    text: &str,
    partitions: &[String],
    file_row: bool,
    param: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    let pairs: Vec<String> = partitions
        .iter()
        .filter(|p| *p != crate::window::WINDOW_KEY)
        .cloned()
        .collect();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| Error::Internal("unclosed {{ in a sql/ file".into()))?;
        let words: Vec<&str> = after[..end].split_whitespace().collect();
        match words.as_slice() {
            ["part"] => columns(&mut out, partitions, None),
            ["part", t] => columns(&mut out, partitions, Some(t)),
            ["pair"] => columns(&mut out, &pairs, None),
            ["pair", t] => columns(&mut out, &pairs, Some(t)),
            ["same_window", a, b] => same(&mut out, partitions, a, b),
            ["same_pair", a, b] => same(&mut out, &pairs, a, b),
            ["coalesce_part", a, b] => partitions.iter().for_each(|p| {
                out.push_str(&format!("COALESCE({a}.{p}, {b}.{p}) AS {p}, "));
            }),
            ["group_by_part"] => clause(&mut out, "GROUP BY", partitions),
            ["group_by_pair"] => clause(&mut out, "GROUP BY", &pairs),
            ["partition_by_part"] => clause(&mut out, "PARTITION BY", partitions),
            ["partition_by_part", t] => {
                let qualified: Vec<String> =
                    partitions.iter().map(|k| format!("{t}.{k}")).collect();
                clause(&mut out, "PARTITION BY", &qualified)
            }
            ["partition_by_pair"] => clause(&mut out, "PARTITION BY", &pairs),
            ["file_row"] if file_row => out.push_str("file_row, "),
            ["file_row", t] if file_row => out.push_str(&format!("{t}.file_row, ")),
            ["file_row"] | ["file_row", _] => {}
            ["param", name] => out.push_str(&param(name).ok_or_else(|| {
                Error::Internal(format!("unknown parameter {name} in a sql/ file"))
            })?),
            other => {
                return Err(Error::Internal(format!(
                    "unknown placeholder {{{{{}}}}} in a sql/ file",
                    other.join(" ")
                )))
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `k, ` (or `t.k, `) for every column `k` of `keys`.
fn columns(out: &mut String, keys: &[String], table: Option<&&str>) {
    for key in keys {
        if let Some(t) = table {
            out.push_str(t);
            out.push('.');
        }
        out.push_str(key);
        out.push_str(", ");
    }
}

/// ` AND a.k = b.k` for every column `k` of `keys`.
fn same(out: &mut String, keys: &[String], a: &str, b: &str) {
    for key in keys {
        out.push_str(&format!(" AND {a}.{key} = {b}.{key}"));
    }
}

/// `GROUP BY k1, k2` (or another clause) over `keys`; nothing when there are none.
fn clause(out: &mut String, head: &str, keys: &[String]) {
    if !keys.is_empty() {
        out.push_str(head);
        out.push(' ');
        out.push_str(&keys.join(", "));
    }
}

/// Create every view in `ctx`, whose tables are already registered with the partition
/// columns `partitions` (empty for one window).
pub async fn register_views(ctx: &SessionContext, partitions: &[String]) -> Result<()> {
    create_views(ctx, VIEWS.iter(), partitions).await
}

/// [`register_views`] over tables that count their rows' places in their files (the
/// export's): `gpu_op` and `api_call` carry `file_row` too.
pub async fn register_views_in_file_order(
    ctx: &SessionContext,
    partitions: &[String],
) -> Result<()> {
    for object in VIEWS {
        let text = expand_all(object.text, partitions, true, &|_| None)?;
        create_view(ctx, object, &text).await?;
    }
    Ok(())
}

/// Create the views `objects` define in `ctx`, in order, placeholders expanded for
/// `partitions`; a failure names the file (it is ours, not the user's).
pub async fn create_views(
    ctx: &SessionContext,
    objects: impl Iterator<Item = &SqlObject>,
    partitions: &[String],
) -> Result<()> {
    for object in objects {
        create_view(ctx, object, &expand(object.text, partitions)?).await?;
    }
    Ok(())
}

/// Create the view of `object`'s expanded `text` (when a query first reads it, in a window's
/// catalog: [`crate::catalog::lazy`]); a failure names the file.
async fn create_view(ctx: &SessionContext, object: &SqlObject, text: &str) -> Result<()> {
    let origin = format!("sql/{}", object.path);
    let query = object.query_of(text)?;
    crate::catalog::lazy::create_view(ctx, object.name, query, text, &origin).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_to_nothing_for_one_window() {
        let text = "SELECT {{part}} {{part t}} a FROM x JOIN y ON 1=1 {{same_window x y}}";
        assert_eq!(
            expand(text, &[]).unwrap(),
            "SELECT   a FROM x JOIN y ON 1=1 "
        );
    }

    #[test]
    fn placeholders_expand_to_partition_columns_for_an_archive() {
        let parts = vec!["rank".to_string(), "window_id".to_string()];
        let text = "SELECT {{part t}}a ON 1=1{{same_window x y}}";
        assert_eq!(
            expand(text, &parts).unwrap(),
            "SELECT t.rank, t.window_id, a ON 1=1 AND x.rank = y.rank AND x.window_id = y.window_id"
        );
    }

    #[test]
    fn pair_placeholders_leave_out_window_id() {
        let parts = vec![
            "run".to_string(),
            "rank".to_string(),
            "window_id".to_string(),
        ];
        let text = "SELECT {{pair t}}{{coalesce_part a b}}x FROM a JOIN b ON TRUE{{same_pair a b}} {{partition_by_pair}}";
        assert_eq!(
            expand(text, &parts).unwrap(),
            "SELECT t.run, t.rank, COALESCE(a.run, b.run) AS run, COALESCE(a.rank, b.rank) AS rank, \
             COALESCE(a.window_id, b.window_id) AS window_id, x FROM a JOIN b ON TRUE \
             AND a.run = b.run AND a.rank = b.rank PARTITION BY run, rank"
        );
    }

    #[test]
    fn group_by_part_and_params_expand() {
        let parts = vec!["rank".to_string()];
        let text = "SELECT {{param n}} FROM x {{group_by_part}}";
        let param = |name: &str| (name == "n").then(|| "42".to_string());
        assert_eq!(
            expand_with(text, &parts, &param).unwrap(),
            "SELECT 42 FROM x GROUP BY rank"
        );
        assert_eq!(expand_with(text, &[], &param).unwrap(), "SELECT 42 FROM x ");
        assert!(expand_with("{{param m}}", &[], &param).is_err());
        let window = "OVER ({{partition_by_part g}} ORDER BY ts)";
        assert_eq!(
            expand(window, &parts).unwrap(),
            "OVER (PARTITION BY g.rank ORDER BY ts)"
        );
        assert_eq!(expand(window, &[]).unwrap(), "OVER ( ORDER BY ts)");
    }

    #[test]
    fn file_row_expands_only_where_the_tables_count_it() {
        let text = "SELECT {{file_row}}{{file_row t}}a";
        assert_eq!(expand(text, &[]).unwrap(), "SELECT a");
        let counted = expand_all(text, &[], true, &|_| None).unwrap();
        assert_eq!(counted, "SELECT file_row, t.file_row, a");
    }

    #[test]
    fn unknown_placeholders_are_errors() {
        assert!(expand("{{nope}}", &[]).is_err());
    }
}
