//! Stage `report` (plots): what bounds each step's critical path. Rows of
//! `critical_path_summary` in, one bar per (partition, step) stacking the path's shares by
//! cause (cpu, GPU compute and communication, launch and kernel-kernel overhead).

use super::{share_bars, Bar, Outcome, Segment};
use crate::report::columns::{floats, ints, partitions, texts, Missing};
use crate::report::ReportOutput;

/// The causes in stacking order: (bound_by value, legend name, class).
const CAUSES: [(&str, &str, &str); 5] = [
    ("cpu", "cpu", "mark cpu"),
    ("gpu_compute", "GPU compute", "mark compute"),
    ("gpu_communication", "GPU communication", "mark comm"),
    ("launch_overhead", "launch overhead", "mark noncompute"),
    (
        "kernel_kernel_overhead",
        "kernel-kernel overhead",
        "mark idle",
    ),
];

/// Bars beyond this many steps are left out (the caption says how many).
const MAX_BARS: usize = 60;

pub(super) fn critical_path_summary(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let steps = ints(out, "step")?;
    let names = texts(out, "step_name")?;
    let causes = texts(out, "bound_by")?;
    let times = ints(out, "dur_ns")?;
    let shares = floats(out, "share_pct")?;

    // one bar per (partition, step), in the report's order; its share per cause
    let mut keys = Vec::new();
    let mut cells: Vec<[(Option<f64>, Option<i64>); 5]> = Vec::new();
    for row in 0..steps.len() {
        let key = (parts[row].clone(), steps[row]);
        let bar = match keys.iter().position(|(k, _)| *k == key) {
            Some(bar) => bar,
            None => {
                let label = match (parts[row].to_string(), &names[row]) {
                    (p, Some(name)) if p.is_empty() => name.clone(),
                    (p, Some(name)) => format!("{p} {name}"),
                    (p, None) => format!("{p} step {}", steps[row].unwrap_or(-1)),
                };
                keys.push((key, label));
                cells.push([(None, None); 5]);
                keys.len() - 1
            }
        };
        if let Some(cause) = CAUSES
            .iter()
            .position(|c| causes[row].as_deref() == Some(c.0))
        {
            cells[bar][cause] = (shares[row], times[row]);
        }
    }
    let shown = keys.len().min(MAX_BARS);
    let bars: Vec<Bar> = keys
        .iter()
        .zip(&cells)
        .take(shown)
        .map(|((_, label), cell)| Bar {
            label: label.clone(),
            segments: CAUSES
                .iter()
                .zip(cell)
                .map(|((_, name, class), (pct, ns))| Segment {
                    name,
                    class,
                    pct: *pct,
                    ns: *ns,
                })
                .collect(),
        })
        .collect();
    let legend: Vec<(&str, &str)> = CAUSES.iter().map(|c| (c.1, c.2)).collect();
    let mut caption = "Each bar is a step's critical path split by what bounds it: CPU work, GPU \
                       compute and communication kernels, launch delays and gaps between the \
                       kernels of a stream; hover a segment for its time."
        .to_string();
    if shown < keys.len() {
        caption.push_str(&format!(
            " The first {shown} of {} steps are drawn.",
            keys.len()
        ));
    }
    Ok(Outcome::Drawn(share_bars(
        &out.name,
        "critical path shares per step",
        &legend,
        &bars,
        "share of the critical path (%)",
        caption,
    )))
}

#[cfg(test)]
mod tests {
    use crate::report::plots::tests::drawn;
    use crate::report::sample::{self, marks};

    #[test]
    fn a_bar_per_step_with_a_segment_per_cause() {
        // rank 0 step 0: cpu 30 %, compute 70 %; rank 1 step 0: compute 100 %
        let out = sample::critical_path_summary(&[
            (0, 0, "cpu", 3),
            (0, 0, "gpu_compute", 7),
            (1, 0, "gpu_compute", 5),
        ]);
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "critical_path_summary"), 3);
        assert_eq!(p.svg.matches("class=\"mark compute\"").count(), 2);
        assert!(
            p.svg.find(">rank=0 ProfilerStep#0</text>")
                < p.svg.find(">rank=1 ProfilerStep#0</text>")
        );
        assert!(p
            .svg
            .contains("rank=0 ProfilerStep#0: cpu 3.00 ms (30.0 %)"));
        assert!(p
            .svg
            .contains("rank=1 ProfilerStep#0: GPU compute 5.00 ms (100.0 %)"));
    }

    #[test]
    fn many_steps_are_cut_and_the_caption_says_so() {
        let rows: Vec<(i64, i64, &str, i64)> = (0..70).map(|s| (0, s, "cpu", 1)).collect();
        let p = drawn(&sample::critical_path_summary(&rows));
        assert_eq!(marks(&p.svg, "critical_path_summary"), super::MAX_BARS);
        assert!(p.caption.contains("The first 60 of 70 steps are drawn."));
    }
}
