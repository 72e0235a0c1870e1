//! Stage `report` (plots): the temporal breakdown. Rows of `temporal_breakdown` in, one bar
//! per partition (one for a single window) stacking its idle, compute and non-compute shares.

use super::{x_axis, Axis, Outcome, Plot, RIGHT, TOP, WIDTH, X_AXIS};
use crate::report::columns::{floats, ints, partitions, Missing};
use crate::report::svg::{duration, Anchor, Svg};
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

    let (left, bar_h, gap) = (230.0, 24.0, 8.0);
    let right = WIDTH - RIGHT - 120.0;
    let bottom = TOP + order.len() as f64 * (bar_h + gap);
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS,
        "temporal breakdown per partition",
    );
    let mut x = left;
    for (_, _, name, class) in &columns {
        svg.rect(x, 7.0, 12.0, 12.0, &class.replace("mark ", "swatch "), None);
        svg.text(x + 17.0, 17.0, Anchor::Start, "legend", name);
        x += 110.0;
    }
    let axis = Axis::new(100.0, 5);
    x_axis(
        &mut svg,
        &axis,
        (left, right),
        (TOP, bottom),
        "share of the window's time (%)",
    );
    for (i, row) in order.iter().enumerate() {
        let y = TOP + i as f64 * (bar_h + gap);
        let label = match parts[*row].to_string() {
            l if l.is_empty() => "window".to_string(),
            l => l,
        };
        svg.text(
            left - 8.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::End,
            "label",
            &label,
        );
        let mut x = left;
        for (ns, pct, name, class) in &columns {
            let Some(p) = pct[*row].filter(|p| *p > 0.0) else {
                continue;
            };
            let w = p.min(100.0) / 100.0 * (right - left);
            let time = ns[*row].map_or_else(|| "NULL".into(), |v| duration(v as f64));
            let tip = format!("{label}: {name} {time} ({p:.1} %)");
            svg.rect(x, y, w, bar_h, class, Some(&tip));
            if w > 44.0 {
                let text_class = if *name == "idle" {
                    "inbar dark"
                } else {
                    "inbar"
                };
                let mid = x + w / 2.0;
                svg.text(
                    mid,
                    y + bar_h / 2.0 + 4.0,
                    Anchor::Middle,
                    text_class,
                    &format!("{p:.1} %"),
                );
            }
            x += w;
        }
    }
    let caption = "Each bar is a partition's wall time split into idle (no GPU work), compute \
                   (kernels) and non-compute (copies, sets, other GPU work); hover a segment \
                   for its time."
        .to_string();
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
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
