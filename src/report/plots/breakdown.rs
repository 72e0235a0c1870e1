//! Stage `report` (plots): the temporal breakdown. Rows of `temporal_breakdown` in, one bar
//! per partition (one for a single window) stacking its idle, compute and non-compute shares.

use super::{share_bars, Bar, Outcome, Segment};
use crate::report::columns::{floats, ints, partitions, Missing};
use crate::report::ReportOutput;

/// The stacked segments: (ns column, pct column, legend name, class).
const SEGMENTS: [(&str, &str, &str, &str); 3] = [
    ("idle_ns", "idle_pct", "idle", "mark idle"),
    ("compute_ns", "compute_pct", "compute", "mark compute"),
    (
        "non_compute_ns",
        "non_compute_pct",
        "non-compute",
        "mark noncompute",
    ),
];

pub(super) fn temporal_breakdown(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let mut columns = Vec::new();
    for (ns, pct, name, class) in SEGMENTS {
        columns.push((ints(out, ns)?, floats(out, pct)?, name, class));
    }
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|a, b| parts[*a].cmp(&parts[*b]).then(a.cmp(b)));
    let bars = order
        .iter()
        .map(|row| {
            let label = match parts[*row].to_string() {
                l if l.is_empty() => "window".to_string(),
                l => l,
            };
            let segments = columns
                .iter()
                .map(|(ns, pct, name, class)| Segment {
                    name,
                    class,
                    pct: pct[*row],
                    ns: ns[*row],
                })
                .collect();
            Bar { label, segments }
        })
        .collect::<Vec<_>>();
    let legend: Vec<(&str, &str)> = SEGMENTS.iter().map(|s| (s.2, s.3)).collect();
    let caption = "Each bar is a partition's wall time split into idle (no GPU work), compute \
                   (kernels) and non-compute (copies, sets, other GPU work); hover a segment \
                   for its time."
        .to_string();
    Ok(Outcome::Drawn(share_bars(
        &out.name,
        "temporal breakdown per partition",
        &legend,
        &bars,
        "share of the window's time (%)",
        caption,
    )))
}

#[cfg(test)]
mod tests {
    use crate::report::plots::tests::drawn;
    use crate::report::sample::{self, marks};

    #[test]
    fn breakdown_stacks_a_segment_per_nonzero_share() {
        let out = sample::temporal_breakdown(&[("h2", [0, 6, 4]), ("h1", [2, 5, 3])]);
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "temporal_breakdown"), 5);
        assert_eq!(p.svg.matches("class=\"mark compute\"").count(), 2);
        assert_eq!(p.svg.matches("class=\"mark idle\"").count(), 1);
        // bars in partition order: h1 above h2
        assert!(p.svg.find(">host=h1</text>") < p.svg.find(">host=h2</text>"));
        assert!(p.svg.contains("host=h1: compute 5.00 ms (50.0 %)"));
    }

    #[test]
    fn one_window_breakdown_is_one_bar() {
        let mut out = sample::temporal_breakdown(&[("h", [1, 1, 2])]);
        out.partition_keys.clear();
        let p = drawn(&out);
        assert!(p.svg.contains(">window</text>"));
        assert_eq!(marks(&p.svg, "temporal_breakdown"), 3);
    }
}
