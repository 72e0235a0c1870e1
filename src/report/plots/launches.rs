//! Stage `report` (plots): the launch-delay histogram. `launch_delay_ns` of `launch_stats`
//! in, launches counted in log-spaced bins (the 1-2-5 series: three per decade); delays of
//! 0 ns or less in a bar of their own, nulls (no GPU side) counted and left out.

use super::{launches, Axis, Outcome, Plot, RIGHT, TOP, WIDTH, X_AXIS};
use crate::report::columns::{ints, Missing};
use crate::report::svg::{round_duration, tick_label, Anchor, Svg};
use crate::report::ReportOutput;

/// The 1-2-5 series in ns: edge(0) = 1 ns, edge(3) = 10 ns, ...
fn edge(k: u32) -> i64 {
    [1, 2, 5][(k % 3) as usize] * 10i64.pow(k / 3)
}

/// Largest series index whose edge is at most `v` (v >= 1).
fn edge_at_or_below(v: i64) -> u32 {
    let mut k = 0;
    while k + 1 < 57 && edge(k + 1) <= v {
        k += 1;
    }
    k
}

pub(super) fn launch_stats(out: &ReportOutput) -> Result<Outcome, Missing> {
    let delays = ints(out, "launch_delay_ns")?;
    let nulls = delays.iter().filter(|d| d.is_none()).count();
    let values: Vec<i64> = delays.into_iter().flatten().collect();
    if values.is_empty() {
        return Ok(Outcome::Not(format!(
            "No plot: launch_delay_ns is null in all {nulls} rows (no launch reached the GPU)."
        )));
    }
    let non_positive = values.iter().filter(|v| **v <= 0).count();
    let positive: Vec<i64> = values.iter().copied().filter(|v| *v > 0).collect();
    // bins [edge(k), edge(k+1)) for k in lo..hi
    let (lo, hi) = match (positive.iter().min(), positive.iter().max()) {
        (Some(min), Some(max)) => (edge_at_or_below(*min), edge_at_or_below(*max) + 1),
        _ => (0, 0),
    };
    let mut counts = vec![0usize; (hi - lo) as usize];
    for v in &positive {
        counts[(edge_at_or_below(*v) - lo) as usize] += 1;
    }
    // (label of the bar, tooltip range, count); a "≤ 0" bar first when there are such delays
    let mut bars: Vec<(String, usize)> = Vec::new();
    if non_positive > 0 {
        bars.push(("≤ 0 ns".to_string(), non_positive));
    }
    for (i, c) in counts.iter().enumerate() {
        let k = lo + i as u32;
        let range = format!(
            "{} – {}",
            round_duration(edge(k) as f64),
            round_duration(edge(k + 1) as f64)
        );
        bars.push((range, *c));
    }

    let max = bars.iter().map(|(_, c)| *c).max().unwrap_or(0) as f64;
    let y_axis = Axis::new(max, 5);
    let ymax = y_axis.span;
    let (left, plot_h) = (90.0, 300.0);
    let right = WIDTH - RIGHT;
    let bottom = TOP + plot_h;
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS + 14.0,
        "launch-delay histogram",
    );
    svg.text(
        left,
        18.0,
        Anchor::Start,
        "legend",
        "launches per bin; bins are log-spaced (1-2-5 per decade), each bar one bin",
    );
    for t in &y_axis.ticks {
        let y = bottom - t / ymax * plot_h;
        svg.line(left, y, right, y, "grid");
        svg.text(
            left - 6.0,
            y + 4.0,
            Anchor::End,
            "tick",
            &tick_label(*t, y_axis.step),
        );
    }
    svg.vertical_text(30.0, TOP + plot_h / 2.0, "axis-title", "launches");
    let slot = (right - left) / bars.len() as f64;
    let offset = usize::from(non_positive > 0);
    // every edge labelled, or every third (one per decade) when the bins are many
    let every = if bars.len() > 16 { 3 } else { 1 };
    for (i, (range, count)) in bars.iter().enumerate() {
        let x = left + i as f64 * slot;
        if *count > 0 {
            let h = *count as f64 / ymax * plot_h;
            let tip = format!("launch delay {range}: {}", launches(*count as i64));
            svg.rect(x + 1.0, bottom - h, slot - 2.0, h, "mark", Some(&tip));
        }
        // edge labels under the bin boundaries; the "≤ 0" bar is labelled in its middle
        if i < offset {
            svg.text(x + slot / 2.0, bottom + 15.0, Anchor::Middle, "tick", "≤ 0");
        } else {
            let k = lo + (i - offset) as u32;
            if (k - lo).is_multiple_of(every) {
                svg.text(
                    x,
                    bottom + 15.0,
                    Anchor::Middle,
                    "tick",
                    &round_duration(edge(k) as f64),
                );
            }
        }
    }
    if hi > lo && (hi - lo).is_multiple_of(every) {
        svg.text(
            right,
            bottom + 15.0,
            Anchor::Middle,
            "tick",
            &round_duration(edge(hi) as f64),
        );
    }
    svg.line(left, bottom, right, bottom, "axis");
    svg.line(left, TOP, left, bottom, "axis");
    svg.text(
        (left + right) / 2.0,
        bottom + 38.0,
        Anchor::Middle,
        "axis-title",
        "launch delay: GPU start − CPU launch call start (log scale)",
    );
    let caption = format!(
        "{} launches with a delay{}; {nulls} without a GPU side (launch_delay_ns null) left out.",
        values.len(),
        if non_positive > 0 {
            format!(" ({non_positive} of them ≤ 0 ns, in the first bar)")
        } else {
            String::new()
        }
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::tests::{drawn, not_drawn};
    use crate::report::sample::{self, marks};

    #[test]
    fn launch_histogram_bins_on_one_two_five_edges_and_counts_nulls() {
        let delays = [
            Some(500),
            Some(1500),
            Some(1600),
            Some(25_000),
            None,
            None,
            Some(-10),
        ];
        let p = drawn(&sample::launch_stats(&delays));
        // [500 ns, 1 µs): 1, [1 µs, 2 µs): 2, [20 µs, 50 µs): 1, and the ≤ 0 bar: 1
        assert_eq!(marks(&p.svg, "launch_stats"), 4);
        assert!(p.svg.contains("launch delay 1 µs – 2 µs: 2 launches"));
        assert!(p.svg.contains("launch delay 20 µs – 50 µs: 1 launch"));
        assert!(p.svg.contains("launch delay ≤ 0 ns: 1 launch"));
        assert!(p.caption.contains("2 without a GPU side"));
        assert!(p
            .caption
            .starts_with("5 launches with a delay (1 of them ≤ 0 ns"));
    }

    #[test]
    fn launch_histogram_of_only_nulls_is_no_plot() {
        let why = not_drawn(&sample::launch_stats(&[None, None]));
        assert!(why.contains("null in all 2 rows"), "{why}");
    }

    #[test]
    fn series_edges_run_one_two_five() {
        let e: Vec<i64> = (0..7).map(edge).collect();
        assert_eq!(e, [1, 2, 5, 10, 20, 50, 100]);
        assert_eq!(edge_at_or_below(1), 0);
        assert_eq!(edge_at_or_below(19), 3);
        assert_eq!(edge_at_or_below(20), 4);
        assert_eq!(edge_at_or_below(i64::MAX), 56);
    }
}
