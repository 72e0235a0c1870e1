//! Stage `report` (plots): the pictures of `tracesql diff --format html`. `waterfall`
//! (diff_summary): the change of step time from BASE to NEW, cause by cause, each a bar that
//! starts where the previous one ended, then the whole change. `steps` (diff_step): each
//! paired step's time in both runs, side by side. `changes` (diff_by_op, _kernel,
//! _annotation): the most regressed and most improved keys, their change per step with its
//! spread as a whisker, faint when the noise test does not flag it.

use super::{Outcome, Plot, RIGHT, TOP, WIDTH, X_AXIS};
use crate::report::columns::{ints, partitions, texts, Missing};
use crate::report::svg::{duration, short_name, tick_label, ticks, Anchor, Svg, TimeUnit};
use crate::report::ReportOutput;

/// The causes of `diff_step`/`diff_summary`, in the order the waterfall stacks them.
pub const CAUSES: [(&str, &str); 6] = [
    ("gpu_ns", "GPU time of paired work"),
    ("added_ns", "work only NEW has"),
    ("removed_ns", "work only BASE has"),
    ("launch_ns", "launch calls"),
    ("host_wait_ns", "GPU waiting for the host"),
    ("residual_ns", "residual (stream overlap, CPU)"),
];
/// Keys shown in each direction of a changes plot.
pub const TOP_CHANGES: usize = 10;
/// Steps drawn in the per-step plot.
pub const MAX_STEPS: usize = 60;
const SHORT_NAME: usize = 46;

/// An axis over [lo, hi] (0 always inside) in `unit`s: ticks at a 1-2-5 step.
struct SignedAxis {
    ticks: Vec<f64>,
    step: f64,
    lo: f64,
    hi: f64,
}

impl SignedAxis {
    fn new(lo: f64, hi: f64, target: usize) -> SignedAxis {
        let (lo, hi) = (lo.min(0.0), hi.max(0.0));
        let step = ticks(hi - lo, target).1;
        let (first, last) = ((lo / step).floor() as i64, (hi / step).ceil() as i64);
        let last = last.max(first + 1);
        SignedAxis {
            ticks: (first..=last).map(|i| i as f64 * step).collect(),
            step,
            lo: first as f64 * step,
            hi: last as f64 * step,
        }
    }

    /// The x of `v` between `left` and `right`.
    fn x(&self, v: f64, (left, right): (f64, f64)) -> f64 {
        left + (v - self.lo) / (self.hi - self.lo) * (right - left)
    }

    fn draw(&self, svg: &mut Svg, span: (f64, f64), (top, y): (f64, f64), title: &str) {
        for t in &self.ticks {
            let x = self.x(*t, span);
            svg.line(x, top, x, y, if *t == 0.0 { "axis" } else { "grid" });
            svg.text(
                x,
                y + 15.0,
                Anchor::Middle,
                "tick",
                &tick_label(*t, self.step),
            );
        }
        svg.line(span.0, y, span.1, y, "axis");
        svg.text(
            (span.0 + span.1) / 2.0,
            y + 36.0,
            Anchor::Middle,
            "axis-title",
            title,
        );
    }
}

/// "+1.25 ms", "-300 ns", "0 ns".
fn signed(ns: f64) -> String {
    if ns > 0.0 {
        format!("+{}", duration(ns))
    } else {
        duration(ns)
    }
}

fn direction(ns: f64) -> &'static str {
    if ns > 0.0 {
        "worse"
    } else if ns < 0.0 {
        "better"
    } else {
        "total"
    }
}

fn sum(out: &ReportOutput, column: &str) -> Result<i64, Missing> {
    Ok(ints(out, column)?.into_iter().flatten().sum())
}

pub(super) fn waterfall(out: &ReportOutput) -> Result<Outcome, Missing> {
    let ranks = out.num_rows();
    let (base, new, delta) = (
        sum(out, "base_ns")?,
        sum(out, "new_ns")?,
        sum(out, "delta_ns")?,
    );
    let steps = sum(out, "steps")?;
    let mut bars = Vec::new(); // (label, from, to)
    let mut at = 0i64;
    for (column, label) in CAUSES {
        let v = sum(out, column)?;
        bars.push((label, at, at + v));
        at += v;
    }
    bars.push(("change of step time", 0, delta));
    let lo = bars.iter().map(|b| b.1.min(b.2)).min().unwrap_or(0) as f64;
    let hi = bars.iter().map(|b| b.1.max(b.2)).max().unwrap_or(0) as f64;
    let unit = TimeUnit::for_max(lo.abs().max(hi.abs()));
    let axis = SignedAxis::new(lo / unit.ns, hi / unit.ns, 8);
    let span = (300.0, WIDTH - RIGHT - 130.0);
    let (bar_h, gap) = (20.0, 8.0);
    let bottom = TOP + bars.len() as f64 * (bar_h + gap);
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS,
        "step time change by cause",
    );
    let flagged = ints(out, "flagged")?.into_iter().flatten().any(|f| f != 0);
    svg.text(
        span.0,
        18.0,
        Anchor::Start,
        "legend",
        &format!(
            "BASE {} → NEW {} over {steps} paired steps: {} ({})",
            duration(base as f64),
            duration(new as f64),
            signed(delta as f64),
            if flagged {
                "larger than the step-to-step noise"
            } else {
                "not told apart from the noise"
            }
        ),
    );
    axis.draw(
        &mut svg,
        span,
        (TOP, bottom),
        &format!("change ({})", unit.name),
    );
    for (i, (label, from, to)) in bars.iter().enumerate() {
        let y = TOP + i as f64 * (bar_h + gap);
        let (a, b) = (
            axis.x(*from as f64 / unit.ns, span),
            axis.x(*to as f64 / unit.ns, span),
        );
        let total = i == bars.len() - 1;
        let class = if total {
            "mark total".to_string()
        } else {
            format!("mark {}", direction((to - from) as f64))
        };
        let value = signed((to - from) as f64);
        svg.text(
            span.0 - 8.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::End,
            "label",
            label,
        );
        // a zero change is a hairline, so every cause has its mark
        svg.rect(
            a.min(b),
            y,
            (a - b).abs().max(1.0),
            bar_h,
            &class,
            Some(&format!("{label}: {value}")),
        );
        svg.text(
            a.max(b) + 6.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::Start,
            "value",
            &value,
        );
    }
    let over = if ranks > 1 {
        format!(", summed over {ranks} ranks")
    } else {
        String::new()
    };
    let caption = format!(
        "How NEW's step time differs from BASE's{over}: each cause starts where the one above \
         ended, red slower, green faster; the parts add up to the last bar exactly (the \
         residual is what the causes do not explain)."
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

pub(super) fn steps(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let step = ints(out, "step")?;
    let base = ints(out, "base_ns")?;
    let new = ints(out, "new_ns")?;
    let shown = parts.len().min(MAX_STEPS);
    let several = parts.iter().any(|p| *p != parts[0]);
    let max = base[..shown]
        .iter()
        .chain(&new[..shown])
        .flatten()
        .copied()
        .max()
        .unwrap_or(0);
    let unit = TimeUnit::for_max(max as f64);
    let (vticks, vstep) = ticks(max as f64 / unit.ns, 5);
    let vspan = *vticks.last().expect("ticks are never empty");
    let (left, right, plot_h) = (70.0, WIDTH - RIGHT, 220.0);
    let bottom = TOP + plot_h;
    let label_h = if several { 60.0 } else { 20.0 };
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + label_h + 30.0,
        "step time of both runs",
    );
    svg.rect(left, 8.0, 12.0, 12.0, "base", None);
    svg.text(left + 16.0, 18.0, Anchor::Start, "legend", "BASE");
    svg.rect(left + 70.0, 8.0, 12.0, 12.0, "new", None);
    svg.text(left + 86.0, 18.0, Anchor::Start, "legend", "NEW");
    for t in &vticks {
        let y = bottom - t / vspan * plot_h;
        svg.line(left, y, right, y, "grid");
        svg.text(
            left - 6.0,
            y + 4.0,
            Anchor::End,
            "tick",
            &tick_label(*t, vstep),
        );
    }
    svg.vertical_text(
        18.0,
        TOP + plot_h / 2.0,
        "axis-title",
        &format!("step time ({})", unit.name),
    );
    svg.line(left, bottom, right, bottom, "axis");
    let slot = (right - left) / shown.max(1) as f64;
    let bar_w = (slot * 0.4).min(28.0);
    for row in 0..shown {
        let x = left + row as f64 * slot + slot / 2.0;
        let label = match (several, step[row]) {
            (true, Some(s)) => format!("{} · {s}", parts[row]),
            (_, s) => s.map_or("NULL".into(), |s| s.to_string()),
        };
        for (run, class, v, dx) in [
            ("BASE", "mark base", base[row], -bar_w),
            ("NEW", "mark new", new[row], 0.0),
        ] {
            let v = v.unwrap_or(0) as f64;
            let h = v / unit.ns / vspan * plot_h;
            svg.rect(
                x + dx,
                bottom - h,
                bar_w,
                h,
                class,
                Some(&format!("step {label}, {run}: {}", duration(v))),
            );
        }
        if several {
            svg.vertical_text(x, bottom + 30.0, "tick", &label);
        } else {
            svg.text(x, bottom + 15.0, Anchor::Middle, "tick", &label);
        }
    }
    svg.text(
        (left + right) / 2.0,
        bottom + label_h + 22.0,
        Anchor::Middle,
        "axis-title",
        "paired step",
    );
    let more = if parts.len() > shown {
        format!(" The first {shown} of {} rows are drawn.", parts.len())
    } else {
        String::new()
    };
    let caption = format!(
        "Each paired step's time (its span), BASE left, NEW right: a change that every step \
         shares is signal, one that comes and goes is noise.{more}"
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

/// One key's change for the changes plot.
struct Change {
    label: String,
    per_step: f64,
    spread: f64,
    flagged: bool,
    counts: (i64, i64),
}

pub(super) fn changes(out: &ReportOutput) -> Result<Outcome, Missing> {
    let parts = partitions(out)?;
    let key = texts(out, "key")?;
    let delta = ints(out, "delta_ns")?;
    let spread = ints(out, "spread_ns")?;
    let steps = ints(out, "steps")?;
    let flagged = ints(out, "flagged")?;
    let (base_count, new_count) = (ints(out, "base_count")?, ints(out, "new_count")?);
    let several = parts.iter().any(|p| *p != parts[0]);
    let mut all: Vec<Change> = (0..parts.len())
        .map(|row| {
            let name = key[row].clone().unwrap_or_else(|| "NULL".into());
            Change {
                label: if several {
                    format!("{} · {name}", parts[row])
                } else {
                    name
                },
                per_step: delta[row].unwrap_or(0) as f64 / steps[row].unwrap_or(1).max(1) as f64,
                spread: spread[row].unwrap_or(0) as f64,
                flagged: flagged[row].unwrap_or(0) != 0,
                counts: (base_count[row].unwrap_or(0), new_count[row].unwrap_or(0)),
            }
        })
        .collect();
    all.sort_by(|a, b| {
        b.per_step
            .total_cmp(&a.per_step)
            .then_with(|| a.label.cmp(&b.label))
    });
    let worse: Vec<&Change> = all
        .iter()
        .filter(|c| c.per_step > 0.0)
        .take(TOP_CHANGES)
        .collect();
    let better: Vec<&Change> = all
        .iter()
        .rev()
        .filter(|c| c.per_step < 0.0)
        .take(TOP_CHANGES)
        .collect();
    if worse.is_empty() && better.is_empty() {
        return Ok(Outcome::Not(format!(
            "No plot: none of the {} keys changed.",
            all.len()
        )));
    }
    let shown: Vec<&Change> = worse.iter().chain(better.iter().rev()).copied().collect();
    let reach = |c: &&Change| c.per_step.abs() + c.spread;
    let max = shown.iter().map(reach).fold(0.0, f64::max);
    let unit = TimeUnit::for_max(max);
    let axis = SignedAxis::new(-max / unit.ns, max / unit.ns, 8);
    let span = (360.0, WIDTH - RIGHT - 170.0);
    let (bar_h, gap) = (18.0, 7.0);
    let bottom = TOP + shown.len() as f64 * (bar_h + gap);
    let mut svg = Svg::new(
        &out.name,
        WIDTH,
        bottom + X_AXIS,
        "most regressed and improved",
    );
    svg.text(
        span.0,
        18.0,
        Anchor::Start,
        "legend",
        "change per step · whisker: per-step spread · faint: within the noise",
    );
    axis.draw(
        &mut svg,
        span,
        (TOP, bottom),
        &format!("change per step ({})", unit.name),
    );
    let zero = axis.x(0.0, span);
    for (i, c) in shown.iter().enumerate() {
        let y = TOP + i as f64 * (bar_h + gap);
        let end = axis.x(c.per_step / unit.ns, span);
        let class = format!(
            "mark {}{}",
            direction(c.per_step),
            if c.flagged { "" } else { " faint" }
        );
        let value = format!("{} ± {}", signed(c.per_step), duration(c.spread));
        let tip = format!(
            "{}\n{value} per step, {} → {} ops{}",
            c.label,
            c.counts.0,
            c.counts.1,
            if c.flagged { ", flagged" } else { "" }
        );
        svg.text_tip(
            span.0 - 8.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::End,
            "label",
            &short_name(&c.label, SHORT_NAME),
            Some(&c.label),
        );
        svg.rect(
            zero.min(end),
            y,
            (end - zero).abs(),
            bar_h,
            &class,
            Some(&tip),
        );
        let (lo, hi) = (
            axis.x((c.per_step - c.spread) / unit.ns, span),
            axis.x((c.per_step + c.spread) / unit.ns, span),
        );
        svg.line(lo, y + bar_h / 2.0, hi, y + bar_h / 2.0, "whisker");
        svg.text(
            span.1 + 6.0,
            y + bar_h / 2.0 + 4.0,
            Anchor::Start,
            "value",
            &value,
        );
    }
    let caption = format!(
        "The {} most regressed (red) and {} most improved (green) of {} keys by their change \
         of GPU time per paired step; hover a name for the whole of it.",
        worse.len(),
        better.len(),
        all.len()
    );
    Ok(Outcome::Drawn(Plot {
        svg: svg.finish(),
        caption,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::tests::drawn;
    use crate::report::sample::{self, marks};

    fn summary(values: &[(&str, i64)]) -> ReportOutput {
        let mut columns = vec![
            ("steps", sample::i64s(&[Some(4)])),
            ("flagged", sample::i64s(&[Some(1)])),
        ];
        columns.extend(values.iter().map(|(n, v)| (*n, sample::i64s(&[Some(*v)]))));
        sample::output("diff_summary", &[], columns)
    }

    #[test]
    fn the_waterfall_has_a_bar_per_cause_and_the_change() {
        let out = summary(&[
            ("base_ns", 1_000_000),
            ("new_ns", 1_300_000),
            ("delta_ns", 300_000),
            ("gpu_ns", 200_000),
            ("added_ns", 150_000),
            ("removed_ns", -20_000),
            ("launch_ns", 0),
            ("host_wait_ns", 10_000),
            ("residual_ns", -40_000),
        ]);
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "diff_summary"), CAUSES.len() + 1);
        assert_eq!(p.svg.matches("class=\"mark worse\"").count(), 3);
        assert_eq!(p.svg.matches("class=\"mark better\"").count(), 2);
        assert!(p.svg.contains(">+300 µs</text>"));
        assert!(p
            .svg
            .contains("BASE 1.00 ms → NEW 1.30 ms over 4 paired steps: +300 µs"));
    }

    #[test]
    fn a_missing_cause_says_so() {
        let out = summary(&[("base_ns", 1), ("new_ns", 1), ("delta_ns", 0)]);
        let why = crate::report::plots::tests::not_drawn(&out);
        assert_eq!(why, "No plot: column `gpu_ns` is missing.");
    }

    #[test]
    fn steps_are_two_bars_each() {
        let out = sample::output(
            "diff_step",
            &[],
            vec![
                ("step", sample::i64s(&[Some(1), Some(2), Some(3)])),
                ("base_ns", sample::i64s(&[Some(10), Some(11), Some(12)])),
                ("new_ns", sample::i64s(&[Some(13), Some(14), Some(15)])),
            ],
        );
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "diff_step"), 6);
        assert!(p.svg.contains("step 2, NEW: 14 ns"));
    }

    #[test]
    fn changes_show_the_top_of_each_direction_faint_when_not_flagged() {
        let n = 25;
        let keys: Vec<String> = (0..n).map(|i| format!("op{i:02}")).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        // op13..op24 slower by 2..24 µs over 2 steps (op24 flagged), op12 unchanged,
        // op00..op11 faster
        let delta: Vec<Option<i64>> = (0..n).map(|i| Some((12 - i as i64) * -1000 * 2)).collect();
        let flagged: Vec<Option<i64>> = (0..n).map(|i| Some((i == 24) as i64)).collect();
        let ones = vec![Some(1); n];
        let out = sample::output(
            "diff_by_op",
            &[],
            vec![
                ("key", sample::strs(&refs)),
                ("delta_ns", sample::i64s(&delta)),
                ("spread_ns", sample::i64s(&vec![Some(500); n])),
                ("steps", sample::i64s(&vec![Some(2); n])),
                ("flagged", sample::i64s(&flagged)),
                ("base_count", sample::i64s(&ones)),
                ("new_count", sample::i64s(&ones)),
            ],
        );
        let p = drawn(&out);
        assert_eq!(marks(&p.svg, "diff_by_op"), 2 * TOP_CHANGES);
        // op24: 24 µs over 2 steps, the largest regression, first, solid
        assert!(p.svg.contains("class=\"mark worse\""));
        assert!(p.svg.find(">op24</text>") < p.svg.find(">op15</text>"));
        assert!(!p.svg.contains(">op14</text>"), "11th regression drawn");
        assert!(!p.svg.contains(">op12</text>"), "unchanged drawn");
        assert!(p.svg.contains(">+12.0 µs ± 500 ns</text>"));
        assert_eq!(
            p.svg.matches("class=\"mark better faint\"").count(),
            TOP_CHANGES
        );
        assert!(p
            .caption
            .starts_with("The 10 most regressed (red) and 10 most improved (green) of 25 keys"));
    }
}
