//! Stage `report` (plots): the GPU utilization timeline. Rows of `gpu_utilization` in, one
//! lane per (partition, device, stream), each busy bin a bar as high as its busy %. Time runs
//! from each partition's first bin (windows of an archive need not share a clock).

use std::collections::BTreeMap;

use super::{x_axis, Axis, Outcome, Plot, RIGHT, TOP, WIDTH, X_AXIS};
use crate::report::columns::{floats, ints, partitions, Missing, Partition};
use crate::report::svg::{Anchor, Svg, TimeUnit};
use crate::report::ReportOutput;

fn lane_label(part: &Partition, rest: &str) -> String {
    let part = part.to_string();
    if part.is_empty() {
        rest.to_string()
    } else {
        format!("{part} · {rest}")
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

pub(super) fn gpu_utilization(out: &ReportOutput) -> Result<Outcome, Missing> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plots::{plot, tests::drawn};
    use crate::report::sample::{self, marks};

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
