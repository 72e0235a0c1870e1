//! Stage `report` (plots): a report's batches in, one inline SVG plot out, chosen by the
//! report's name. `gpu_utilization`: a lane per (partition, device, stream), each bin a bar as
//! high as its busy %. `kernel_summary`: the top kernels' total time as horizontal bars,
//! summed over partitions. `launch_stats`: a histogram of launch delays in log-spaced bins.
//! `temporal_breakdown`: idle / compute / non-compute as one stacked bar per partition.

use std::collections::BTreeMap;

use super::columns::{floats, ints, partitions, texts, Missing, Partition};
use super::svg::{duration, round_duration, short_name, tick_label, ticks, Anchor, Svg, TimeUnit};
use super::ReportOutput;

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
];

/// The plot of `out`, or None for a report that has no plot.
pub fn plot(out: &ReportOutput) -> Option<Outcome> {
    let draw: fn(&ReportOutput) -> Result<Outcome, Missing> = match out.name.as_str() {
        "gpu_utilization" => gpu_utilization,
        "kernel_summary" => kernel_summary,
        "launch_stats" => launch_stats,
        "temporal_breakdown" => temporal_breakdown,
        _ => return None,
    };
    if out.num_rows() == 0 {
        return Some(Outcome::Not("The report has no rows: no plot.".into()));
    }
    Some(draw(out).unwrap_or_else(|why| Outcome::Not(format!("No plot: {why}."))))
}

const WIDTH: f64 = 1100.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 34.0;
/// Room under the plot area for the x tick labels and the axis title.
const X_AXIS: f64 = 46.0;

/// A linear axis from 0 to its last tick, which is at or past the largest value.
struct Axis {
    ticks: Vec<f64>,
    step: f64,
    span: f64,
}

impl Axis {
    fn new(max: f64, target: usize) -> Axis {
        let (ticks, step) = ticks(max, target);
        let span = *ticks.last().expect("ticks are never empty");
        Axis { ticks, step, span }
    }
}

/// A bottom x axis at `y` from `left` to `right`, grid lines up to `top`, and its title;
/// drawn before the marks, so the grid stays behind them.
fn x_axis(
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

fn lane_label(part: &Partition, rest: &str) -> String {
    let part = part.to_string();
    if part.is_empty() {
        rest.to_string()
    } else {
        format!("{part} · {rest}")
    }
}

/// "1 launch", "3 launches".
fn launches(n: impl Into<i64>) -> String {
    match n.into() {
        1 => "1 launch".to_string(),
        n => format!("{n} launches"),
    }
}

fn id(v: Option<i64>) -> String {
    v.map_or_else(|| "NULL".to_string(), |v| v.to_string())
}

struct Bin {
    start: i64,
    end: i64,
    pct: f64,
}

fn gpu_utilization(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let device = ints(out, "device_id")?;
    let stream = ints(out, "stream_id")?;
    let start = ints(out, "bin_start_ns")?;
    let end = ints(out, "bin_end_ns")?;
    let pct = floats(out, "busy_pct")?;

    type Lane = (Partition, Option<i64>, Option<i64>);
    let mut lanes: BTreeMap<Lane, Vec<Bin>> = BTreeMap::new();
    let mut origin: BTreeMap<Partition, i64> = BTreeMap::new();
    for (row, part) in parts.into_iter().enumerate() {
        let (Some(s), Some(e)) = (start[row], end[row]) else {
            continue;
        };
        let o = origin.entry(part.clone()).or_insert(s);
        *o = (*o).min(s);
        lanes
            .entry((part, device[row], stream[row]))
            .or_default()
            .push(Bin {
                start: s,
                end: e,
                pct: pct[row].unwrap_or(0.0),
            });
    }
    if lanes.is_empty() {
        return Ok(Outcome::Not(
            "No plot: every bin_start_ns or bin_end_ns is null.".into(),
        ));
    }
    let extent = lanes
        .iter()
        .flat_map(|((part, _, _), bins)| {
            let o = origin[part];
            bins.iter().map(move |b| b.end - o)
        })
        .max()
        .unwrap_or(0) as f64;
    let unit = TimeUnit::for_max(extent);
    let axis = Axis::new(extent / unit.ns, 8);
    let span = axis.span * unit.ns;

    let (left, lane_h, gap) = (230.0, 22.0, 6.0);
    let right = WIDTH - RIGHT;
    let bottom = TOP + lanes.len() as f64 * (lane_h + gap);
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS,
        "GPU utilization timeline per device and stream",
    );
    svg.text(
        left,
        18.0,
        Anchor::Start,
        "legend",
        "bar height = busy % of the bin (a full lane = 100 %)",
    );
    for i in 0..lanes.len() {
        let y = TOP + i as f64 * (lane_h + gap);
        svg.rect(left, y, right - left, lane_h, "lane", None);
    }
    let title = if origin.len() > 1 {
        format!("time since each partition's first bin ({})", unit.name)
    } else {
        format!("time since the first bin ({})", unit.name)
    };
    x_axis(&mut svg, &axis, (left, right), (TOP, bottom), &title);
    let mut marks = 0usize;
    for (i, ((part, dev, stream), bins)) in lanes.iter().enumerate() {
        let y = TOP + i as f64 * (lane_h + gap);
        let label = lane_label(part, &format!("device {} stream {}", id(*dev), id(*stream)));
        svg.text(
            left - 8.0,
            y + lane_h / 2.0 + 4.0,
            Anchor::End,
            "label",
            &label,
        );
        let o = origin[part];
        for b in bins.iter().filter(|b| b.pct > 0.0) {
            let x0 = left + (b.start - o) as f64 / span * (right - left);
            let w = ((b.end - b.start) as f64 / span * (right - left)).max(0.5);
            let h = lane_h * b.pct.min(100.0) / 100.0;
            let tip = format!(
                "{label}: {:.3}–{:.3} {}, {:.1} % busy",
                (b.start - o) as f64 / unit.ns,
                (b.end - o) as f64 / unit.ns,
                unit.name,
                b.pct
            );
            svg.rect(x0, y + lane_h - h, w, h, "mark", Some(&tip));
            marks += 1;
        }
    }
    let caption = format!(
        "{} lanes (partition, device, stream), {marks} busy bins drawn; empty bins are not drawn.",
        lanes.len()
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

/// Kernels shown in the top-kernels plot.
pub const TOP_KERNELS: usize = 15;
/// Characters of a kernel's label (its full name is the tooltip).
const SHORT_NAME: usize = 46;

fn kernel_summary(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let names = texts(out, "name")?;
    let total = ints(out, "total_ns")?;
    let instances = ints(out, "instances")?;

    // name -> (total ns, instances), summed over partitions
    let mut by_name: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for row in 0..names.len() {
        let name = names[row].clone().unwrap_or_else(|| "NULL".into());
        let entry = by_name.entry(name).or_default();
        entry.0 += total[row].unwrap_or(0);
        entry.1 += instances[row].unwrap_or(0);
    }
    let grand: i64 = by_name.values().map(|(t, _)| t).sum();
    let mut ranked: Vec<(&String, &(i64, i64))> = by_name.iter().collect();
    ranked.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(b.0)));
    ranked.truncate(TOP_KERNELS);

    let max = ranked.first().map_or(0, |(_, (t, _))| *t) as f64;
    let unit = TimeUnit::for_max(max);
    let axis = Axis::new(max / unit.ns, 8);
    let span = axis.span * unit.ns;
    let (left, bar_h, gap) = (360.0, 18.0, 7.0);
    let right = WIDTH - RIGHT - 200.0;
    let bottom = TOP + ranked.len() as f64 * (bar_h + gap);
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS,
        "top kernels by total GPU time",
    );
    svg.text(
        left,
        18.0,
        Anchor::Start,
        "legend",
        "total GPU time · share of all kernel time · launches",
    );
    let title = format!("total GPU time ({})", unit.name);
    x_axis(&mut svg, &axis, (left, right), (TOP, bottom), &title);
    for (i, (name, (t, n))) in ranked.iter().enumerate() {
        let y = TOP + i as f64 * (bar_h + gap);
        let w = *t as f64 / span * (right - left);
        let share = if grand > 0 {
            100.0 * *t as f64 / grand as f64
        } else {
            0.0
        };
        let value = format!("{} · {share:.1} % · {}", duration(*t as f64), launches(*n));
        svg.text_tip(
            left - 8.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::End,
            "label",
            &short_name(name, SHORT_NAME),
            Some(name),
        );
        svg.rect(left, y, w, bar_h, "mark", Some(&format!("{name}\n{value}")));
        svg.text(
            left + w + 6.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::Start,
            "value",
            &value,
        );
    }
    let mut distinct: Vec<&Partition> = parts.iter().collect();
    distinct.sort();
    distinct.dedup();
    let summed = if distinct.len() > 1 {
        format!(", summed over {} partitions", distinct.len())
    } else {
        String::new()
    };
    let caption = format!(
        "The top {} of {} kernels by total GPU time{summed}; hover a name for the whole of it.",
        ranked.len(),
        by_name.len()
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

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

fn launch_stats(out: &ReportOutput) -> Result<Outcome, Missing> {
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

fn temporal_breakdown(out: &ReportOutput) -> Result<Outcome, Missing> {
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
    use super::super::sample::{self, marks};
    use super::*;

    fn drawn(out: &ReportOutput) -> Plot {
        match plot(out) {
            Some(Outcome::Drawn(p)) => p,
            Some(Outcome::Not(why)) => panic!("no plot: {why}"),
            None => panic!("no plot for {}", out.name),
        }
    }

    fn not_drawn(out: &ReportOutput) -> String {
        match plot(out) {
            Some(Outcome::Not(why)) => why,
            _ => panic!("a plot was drawn"),
        }
    }

    #[test]
    fn utilization_draws_a_lane_per_partition_device_stream_and_a_bar_per_busy_bin() {
        let p = drawn(&sample::gpu_utilization());
        assert_eq!(p.svg.matches("class=\"lane\"").count(), 3);
        assert_eq!(marks(&p.svg, "gpu_utilization"), 9);
        assert!(p.svg.contains(">rank=0 · device 0 stream 7</text>"));
        assert!(p.svg.contains(">rank=1 · device 0 stream 7</text>"));
        // two partitions: each measured from its own first bin, the unit in the title
        assert!(p
            .svg
            .contains("time since each partition&#39;s first bin (ms)"));
        // rank 1 starts 4 ms later but its first bin is at 0 on the axis
        assert!(p
            .svg
            .contains("rank=1 · device 0 stream 7: 0.000–1.000 ms, 20.0 % busy"));
    }

    #[test]
    fn top_kernels_are_fifteen_bars_largest_first() {
        let names: Vec<String> = (0..20).map(|i| format!("k{i:02}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let p = drawn(&sample::kernel_summary(&refs));
        assert_eq!(marks(&p.svg, "kernel_summary"), TOP_KERNELS);
        // k19 has the largest total (20 µs), k05 is the 15th; k04 is left out
        let first = p.svg.find(">k19</text>").expect("k19 drawn");
        let last = p.svg.find(">k05</text>").expect("k05 drawn");
        assert!(first < last);
        assert!(!p.svg.contains(">k04</text>"));
        assert!(p.caption.starts_with("The top 15 of 20 kernels"));
    }

    #[test]
    fn top_kernels_sum_a_name_over_partitions() {
        let out = sample::output(
            "kernel_summary",
            &["rank"],
            vec![
                ("rank", sample::i64s(&[Some(0), Some(1), Some(1)])),
                ("name", sample::strs(&["gemm", "gemm", "relu"])),
                ("instances", sample::i64s(&[Some(2), Some(3), Some(1)])),
                (
                    "total_ns",
                    sample::i64s(&[Some(4000), Some(6000), Some(5000)]),
                ),
            ],
        );
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "kernel_summary"), 2);
        // gemm: 10 µs of 15 µs, 5 launches, drawn above relu
        assert!(p.svg.contains(">10.0 µs · 66.7 % · 5 launches</text>"));
        assert!(p.svg.find(">gemm</text>") < p.svg.find(">relu</text>"));
        assert!(p.caption.contains("summed over 2 partitions"));
    }

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

    #[test]
    fn null_bins_and_names_do_not_break_a_plot() {
        let out = sample::output(
            "gpu_utilization",
            &[],
            vec![
                ("device_id", sample::i64s(&[Some(0), None])),
                ("stream_id", sample::i64s(&[Some(7), Some(7)])),
                ("bin_start_ns", sample::i64s(&[Some(0), Some(0)])),
                ("bin_end_ns", sample::i64s(&[Some(100), None])),
                ("busy_ns", sample::i64s(&[Some(50), Some(1)])),
                ("busy_pct", sample::f64s(&[None, Some(1.0)])),
            ],
        );
        let why = match plot(&out) {
            Some(Outcome::Drawn(p)) => {
                // one lane, its only bin has a null busy_pct: no mark
                assert_eq!(p.svg.matches("class=\"lane\"").count(), 1);
                marks(&p.svg, "gpu_utilization").to_string()
            }
            _ => "not drawn".to_string(),
        };
        assert_eq!(why, "0");
    }
}
