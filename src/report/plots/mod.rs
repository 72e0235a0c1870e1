//! Stage `report` (plots): a report's batches in, one inline SVG plot out, chosen by the
//! report's name, one module each. `timeline` (gpu_utilization): a lane per (partition,
//! device, stream), each bin a bar as high as its busy %. `kernels` (kernel_summary): the top
//! kernels' total time as horizontal bars, summed over partitions. `launches` (launch_stats):
//! a histogram of launch delays in log-spaced bins. `breakdown` (temporal_breakdown): idle /
//! compute / non-compute as one stacked bar per partition. `critical_path`
//! (critical_path_summary): the path's causes as one stacked bar per step. `diff` (the pages of `tracesql
//! diff`): the step-time waterfall, the steps of both runs, the top changes. This module
//! holds what they share: the outcome, the layout and the x axis.

mod breakdown;
mod critical_path;
mod diff;
mod kernels;
mod launches;
mod timeline;

use crate::report::columns::Missing;
use crate::report::svg::{duration, tick_label, ticks, Anchor, Svg};
use crate::report::ReportOutput;

/// A drawn plot and the sentence that says how to read it.
pub struct Plot {
    pub svg: String,
    pub caption: String,
}

/// What a report's plot came to.
pub enum Outcome {
    Drawn(Plot),
    /// Why there is no plot (no rows, a column missing, every value null).
    Not(String),
}

/// The reports that have a plot, and what it shows (for the page's contents).
pub const PLOTTED: &[(&str, &str)] = &[
    ("gpu_utilization", "GPU utilization timeline"),
    ("kernel_summary", "top kernels by total time"),
    ("launch_stats", "launch-delay histogram"),
    ("temporal_breakdown", "temporal breakdown per partition"),
    ("critical_path_summary", "critical path shares per step"),
];

/// The plot of `out`, or None for a report that has no plot.
pub fn plot(out: &ReportOutput) -> Option<Outcome> {
    let draw: fn(&ReportOutput) -> Result<Outcome, Missing> = match out.name.as_str() {
        "gpu_utilization" => timeline::gpu_utilization,
        "kernel_summary" => kernels::kernel_summary,
        "launch_stats" => launches::launch_stats,
        "temporal_breakdown" => breakdown::temporal_breakdown,
        "critical_path_summary" => critical_path::critical_path_summary,
        "diff_summary" => diff::waterfall,
        "diff_step" => diff::steps,
        "diff_by_op" | "diff_by_kernel" | "diff_by_annotation" => diff::changes,
        _ => return None,
    };
    if out.num_rows() == 0 {
        return Some(Outcome::Not("The report has no rows: no plot.".into()));
    }
    Some(draw(out).unwrap_or_else(|why| Outcome::Not(format!("No plot: {why}."))))
}

pub(super) const WIDTH: f64 = 1100.0;
pub(super) const RIGHT: f64 = 30.0;
pub(super) const TOP: f64 = 34.0;
/// Room under the plot area for the x tick labels and the axis title.
pub(super) const X_AXIS: f64 = 46.0;

/// A linear axis from 0 to its last tick, which is at or past the largest value.
pub(super) struct Axis {
    pub ticks: Vec<f64>,
    pub step: f64,
    pub span: f64,
}

impl Axis {
    pub fn new(max: f64, target: usize) -> Axis {
        let (ticks, step) = ticks(max, target);
        let span = *ticks.last().expect("ticks are never empty");
        Axis { ticks, step, span }
    }
}

/// A bottom x axis at `y` from `left` to `right`, grid lines up to `top`, and its title;
/// drawn before the marks, so the grid stays behind them.
pub(super) fn x_axis(
    svg: &mut Svg,
    axis: &Axis,
    (left, right): (f64, f64),
    (top, y): (f64, f64),
    title: &str,
) {
    for t in &axis.ticks {
        let x = left + t / axis.span * (right - left);
        svg.line(x, top, x, y, "grid");
        svg.text(
            x,
            y + 15.0,
            Anchor::Middle,
            "tick",
            &tick_label(*t, axis.step),
        );
    }
    svg.line(left, y, right, y, "axis");
    svg.text(
        (left + right) / 2.0,
        y + 36.0,
        Anchor::Middle,
        "axis-title",
        title,
    );
}

/// One segment of a share bar: its legend name, class (`mark …`), share (%) and time.
pub(super) struct Segment<'a> {
    pub name: &'a str,
    pub class: &'a str,
    pub pct: Option<f64>,
    pub ns: Option<i64>,
}

/// One bar of shares, labelled on its left.
pub(super) struct Bar<'a> {
    pub label: String,
    pub segments: Vec<Segment<'a>>,
}

/// Horizontal bars from 0 to 100 %, each stacking its segments in order, a legend of
/// (name, class) above: the temporal breakdown and the critical path's causes.
pub(super) fn share_bars(
    plot: &str,
    label: &str,
    legend: &[(&str, &str)],
    bars: &[Bar],
    axis_title: &str,
    caption: String,
) -> Plot {
    let (left, bar_h, gap) = (230.0, 24.0, 8.0);
    let right = WIDTH - RIGHT - 120.0;
    let bottom = TOP + bars.len() as f64 * (bar_h + gap);
    let mut svg = Svg::new(plot, WIDTH, bottom + X_AXIS, label);
    let mut x = left;
    for (name, class) in legend {
        svg.rect(x, 7.0, 12.0, 12.0, &class.replace("mark ", "swatch "), None);
        svg.text(x + 17.0, 17.0, Anchor::Start, "legend", name);
        x += 40.0 + 7.0 * name.chars().count() as f64;
    }
    let axis = Axis::new(100.0, 5);
    x_axis(&mut svg, &axis, (left, right), (TOP, bottom), axis_title);
    for (i, bar) in bars.iter().enumerate() {
        let y = TOP + i as f64 * (bar_h + gap);
        let middle = y + bar_h / 2.0 + 4.0;
        svg.text(left - 8.0, middle, Anchor::End, "label", &bar.label);
        let mut x = left;
        for segment in &bar.segments {
            let Some(p) = segment.pct.filter(|p| *p > 0.0) else {
                continue;
            };
            let w = p.min(100.0) / 100.0 * (right - left);
            let time = segment
                .ns
                .map_or_else(|| "NULL".into(), |v| duration(v as f64));
            let tip = format!("{}: {} {time} ({p:.1} %)", bar.label, segment.name);
            svg.rect(x, y, w, bar_h, segment.class, Some(&tip));
            if w > 44.0 {
                // grey segments take dark text
                let text_class = if segment.class.ends_with("idle") {
                    "inbar dark"
                } else {
                    "inbar"
                };
                let text = format!("{p:.1} %");
                svg.text(x + w / 2.0, middle, Anchor::Middle, text_class, &text);
            }
            x += w;
        }
    }
    Plot {
        svg: svg.finish(),
        caption,
    }
}

/// "1 launch", "3 launches".
pub(super) fn launches(n: impl Into<i64>) -> String {
    match n.into() {
        1 => "1 launch".to_string(),
        n => format!("{n} launches"),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::report::sample;

    pub fn drawn(out: &ReportOutput) -> Plot {
        match plot(out) {
            Some(Outcome::Drawn(p)) => p,
            Some(Outcome::Not(why)) => panic!("no plot: {why}"),
            None => panic!("no plot for {}", out.name),
        }
    }

    pub fn not_drawn(out: &ReportOutput) -> String {
        match plot(out) {
            Some(Outcome::Not(why)) => why,
            _ => panic!("a plot was drawn"),
        }
    }

    #[test]
    fn empty_reports_and_missing_columns_say_why_there_is_no_plot() {
        let empty = sample::kernel_summary(&[]);
        assert!(not_drawn(&empty).contains("no rows"));
        let out = sample::output(
            "gpu_utilization",
            &[],
            vec![("device_id", sample::i64s(&[Some(0)]))],
        );
        assert_eq!(not_drawn(&out), "No plot: column `stream_id` is missing.");
        let other = sample::output("other", &[], vec![("x", sample::i64s(&[Some(1)]))]);
        assert!(plot(&other).is_none());
    }
}
