//! Test inputs: report outputs built by hand with known values, in the shapes the reports
//! produce (`rank` stands for an archive's partition column).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Field, Schema};

use super::ReportOutput;

pub fn i64s(values: &[Option<i64>]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

pub fn f64s(values: &[Option<f64>]) -> ArrayRef {
    Arc::new(Float64Array::from(values.to_vec()))
}

pub fn strs(values: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// One report output in one batch; `partition_keys` name its first columns.
pub fn output(name: &str, partition_keys: &[&str], columns: Vec<(&str, ArrayRef)>) -> ReportOutput {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .expect("columns of one length");
    ReportOutput {
        name: name.to_string(),
        title: format!("{name} title"),
        partition_keys: partition_keys.iter().map(|k| k.to_string()).collect(),
        schema,
        batches: vec![batch],
    }
}

/// Two ranks, device 0, streams 7 and 9 on rank 0, stream 7 on rank 1: three lanes, four
/// bins each; busy bins (pct > 0): 3 + 2 + 4 = 9.
pub fn gpu_utilization() -> ReportOutput {
    let mut rank = Vec::new();
    let mut stream = Vec::new();
    let mut start = Vec::new();
    let mut pct = Vec::new();
    let lanes: [(i64, i64, i64, [f64; 4]); 3] = [
        (0, 7, 1_000_000, [50.0, 0.0, 100.0, 25.0]),
        (0, 9, 1_000_000, [0.0, 10.0, 0.0, 90.0]),
        (1, 7, 5_000_000, [20.0, 40.0, 60.0, 80.0]),
    ];
    for (r, s, origin, pcts) in lanes {
        for (i, p) in pcts.into_iter().enumerate() {
            rank.push(Some(r));
            stream.push(Some(s));
            start.push(Some(origin + i as i64 * 1_000_000));
            pct.push(Some(p));
        }
    }
    let end: Vec<Option<i64>> = start.iter().map(|s| s.map(|s| s + 1_000_000)).collect();
    let busy: Vec<Option<i64>> = pct
        .iter()
        .map(|p| p.map(|p| (p * 10_000.0) as i64))
        .collect();
    output(
        "gpu_utilization",
        &["rank"],
        vec![
            ("rank", i64s(&rank)),
            ("device_id", i64s(&vec![Some(0); rank.len()])),
            ("stream_id", i64s(&stream)),
            ("bin_start_ns", i64s(&start)),
            ("bin_end_ns", i64s(&end)),
            ("busy_ns", i64s(&busy)),
            ("busy_pct", f64s(&pct)),
        ],
    )
}

/// `n` kernels named k0..k{n-1} with total_ns = (i + 1) * 1000, on one window.
pub fn kernel_summary(names: &[&str]) -> ReportOutput {
    let n = names.len();
    let total: Vec<Option<i64>> = (0..n).map(|i| Some((i as i64 + 1) * 1000)).collect();
    let ones = vec![Some(1); n];
    let pct = vec![Some(1.0); n];
    output(
        "kernel_summary",
        &[],
        vec![
            ("name", strs(names)),
            ("instances", i64s(&ones)),
            ("total_ns", i64s(&total)),
            ("time_pct", f64s(&pct)),
            ("avg_ns", i64s(&total)),
            ("med_ns", i64s(&total)),
            ("min_ns", i64s(&total)),
            ("max_ns", i64s(&total)),
            ("stddev_ns", f64s(&vec![Some(0.0); n])),
        ],
    )
}

/// Launch delays as given (None: a launch without a GPU side).
pub fn launch_stats(delays: &[Option<i64>]) -> ReportOutput {
    let n = delays.len();
    let ids: Vec<Option<i64>> = (0..n as i64).map(Some).collect();
    output(
        "launch_stats",
        &[],
        vec![
            ("correlation_id", i64s(&ids)),
            ("cpu_duration_ns", i64s(&vec![Some(3000); n])),
            ("gpu_duration_ns", i64s(&vec![Some(9000); n])),
            ("launch_delay_ns", i64s(delays)),
        ],
    )
}

/// One row per rank: (idle, compute, non-compute) in ms.
pub fn temporal_breakdown(rows: &[(&str, [i64; 3])]) -> ReportOutput {
    let ms = |i: usize| -> Vec<Option<i64>> {
        rows.iter().map(|(_, v)| Some(v[i] * 1_000_000)).collect()
    };
    let pct = |i: usize| -> Vec<Option<f64>> {
        rows.iter()
            .map(|(_, v)| Some(100.0 * v[i] as f64 / v.iter().sum::<i64>() as f64))
            .collect()
    };
    let ranks: Vec<&str> = rows.iter().map(|(r, _)| *r).collect();
    output(
        "temporal_breakdown",
        &["host"],
        vec![
            ("host", strs(&ranks)),
            ("idle_ns", i64s(&ms(0))),
            ("compute_ns", i64s(&ms(1))),
            ("non_compute_ns", i64s(&ms(2))),
            ("kernel_ns", i64s(&ms(1))),
            ("idle_pct", f64s(&pct(0))),
            ("compute_pct", f64s(&pct(1))),
            ("non_compute_pct", f64s(&pct(2))),
        ],
    )
}

/// How many data marks the plot `plot` has in `page`.
pub fn marks(page: &str, plot: &str) -> usize {
    let open = format!("data-plot=\"{plot}\"");
    let Some(start) = page.find(&open) else {
        return 0;
    };
    let end = start + page[start..].find("</svg>").expect("a closed svg");
    page[start..end].matches("class=\"mark").count()
}

/// critical_path_summary rows (rank, step, bound_by, ms); shares of each step's total.
pub fn critical_path_summary(rows: &[(i64, i64, &str, i64)]) -> ReportOutput {
    let total = |r: i64, s: i64| -> i64 {
        rows.iter()
            .filter(|row| row.0 == r && row.1 == s)
            .map(|row| row.3)
            .sum()
    };
    let names: Vec<String> = rows
        .iter()
        .map(|r| format!("ProfilerStep#{}", r.1))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let causes: Vec<&str> = rows.iter().map(|r| r.2).collect();
    output(
        "critical_path_summary",
        &["rank"],
        vec![
            (
                "rank",
                i64s(&rows.iter().map(|r| Some(r.0)).collect::<Vec<_>>()),
            ),
            (
                "step",
                i64s(&rows.iter().map(|r| Some(r.1)).collect::<Vec<_>>()),
            ),
            ("step_name", strs(&names)),
            ("bound_by", strs(&causes)),
            (
                "dur_ns",
                i64s(
                    &rows
                        .iter()
                        .map(|r| Some(r.3 * 1_000_000))
                        .collect::<Vec<_>>(),
                ),
            ),
            (
                "share_pct",
                f64s(
                    &rows
                        .iter()
                        .map(|r| Some(100.0 * r.3 as f64 / total(r.0, r.1) as f64))
                        .collect::<Vec<_>>(),
                ),
            ),
        ],
    )
}
