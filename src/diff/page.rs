//! Stage `diff` (out): what `tracesql diff` prints. Each way of looking at the diff (`--by`)
//! as its ordered query, and the HTML page that shows them all: the step-time waterfall, both
//! runs' steps, the most changed CPU ops, kernels and annotations (plots of `report::plots::diff`), each
//! with its table.

use super::Diff;
use crate::report::ReportOutput;
use crate::Result;

/// The query of one `--by` view (summary, step, kernel, op, annotation, stream, gpu-op), ordered: the pairing keys first, then the most changed first
/// (kernel, op, stream), in step order (step), or by step and time (gpu-op; ops that start
/// together in their pairing order, so that the order is total).
pub fn view_sql(view: &str, keys: &[String]) -> String {
    let keys: String = keys.iter().map(|k| format!("{k}, ")).collect();
    match view {
        "summary" => format!("SELECT * FROM diff_summary ORDER BY {keys}1"),
        "step" => format!("SELECT * FROM diff_step ORDER BY {keys}step"),
        "gpu-op" => format!(
            "SELECT * FROM diff_gpu_op \
             ORDER BY {keys}step, COALESCE(base_ts, new_ts), change, kind, cpu_op, kernel, nth"
        ),
        by => format!(
            "SELECT * EXCLUDE (by) FROM diff_by WHERE by = '{by}' \
             ORDER BY {keys}ABS(delta_ns) DESC, key"
        ),
    }
}

/// The page's sections: (name, title, view). A name picks the section's plot.
const SECTIONS: [(&str, &str, &str); 6] = [
    (
        "diff_summary",
        "Step time over the paired steps, and its change by cause",
        "summary",
    ),
    (
        "diff_step",
        "Each paired step: both runs' times, the change by cause",
        "step",
    ),
    (
        "diff_by_op",
        "Per CPU op that launched GPU work: the change of its GPU time",
        "op",
    ),
    (
        "diff_by_kernel",
        "Per kernel (normalized name): the change of its GPU time",
        "kernel",
    ),
    (
        "diff_by_annotation",
        "Per annotation (innermost range around the launch): the change of its GPU time",
        "annotation",
    ),
    (
        "diff_by_stream",
        "Per stream: the change of its GPU time",
        "stream",
    ),
];

/// The HTML page of the diff of `base` and `new` (their paths, for the header).
pub async fn html(diff: &Diff, base: &str, new: &str) -> Result<String> {
    let mut outputs = Vec::new();
    for (name, title, view) in SECTIONS {
        let df = diff.ctx.sql(&view_sql(view, &diff.keys)).await?;
        let schema = df.schema().inner().clone();
        outputs.push(ReportOutput {
            name: name.to_string(),
            title: title.to_string(),
            partition_keys: diff.keys.clone(),
            schema,
            batches: df.collect().await?,
        });
    }
    Ok(crate::report::html::render_diff(&outputs, base, new))
}
