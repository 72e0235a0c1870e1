//! Stage `report` (plots): the top kernels. Rows of `kernel_summary` in, the
//! [`TOP_KERNELS`] kernels with the most GPU time as horizontal bars, each name's rows summed
//! over the partitions (one bar per kernel name, not per rank).

use std::collections::BTreeMap;

use super::{launches, x_axis, Axis, Outcome, Plot, RIGHT, TOP, WIDTH, X_AXIS};
use crate::report::columns::{ints, partitions, texts, Missing, Partition};
use crate::report::svg::{duration, short_name, Anchor, Svg, TimeUnit};
use crate::report::ReportOutput;

/// Kernels shown in the top-kernels plot.
pub const TOP_KERNELS: usize = 15;
/// Characters of a kernel's label (its full name is the tooltip).
const SHORT_NAME: usize = 46;

pub(super) fn kernel_summary(out: &ReportOutput) -> Result<Outcome, Missing> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::tests::drawn;
    use crate::report::sample::{self, marks};

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
}
