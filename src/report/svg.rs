//! Stage `report` (plot primitives): numbers in, SVG text out. An element writer whose data
//! marks carry `class="mark …"` (what the tests count), nice axis ticks, the time unit an axis
//! speaks in, and the escaping every text and attribute goes through. No JavaScript: the
//! tooltips are SVG `<title>` children.

use std::fmt::Write;

/// Escape text for HTML and SVG, in element content and in quoted attributes alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A coordinate with one decimal (enough at screen resolution, and deterministic).
fn num(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    let s = format!("{v:.1}");
    match s.strip_suffix(".0") {
        Some("-0") => "0".to_string(),
        Some(whole) => whole.to_string(),
        None => s,
    }
}

/// How text sits on its anchor point.
#[derive(Clone, Copy)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// One `<svg>` element being written.
pub struct Svg {
    buf: String,
}

impl Svg {
    /// An SVG of `width` x `height` user units for the report `plot` (its `data-plot`),
    /// described by `label` for screen readers.
    pub fn new(plot: &str, width: f64, height: f64, label: &str) -> Svg {
        let mut buf = String::new();
        let _ = writeln!(
            buf,
            "<svg class=\"plot\" data-plot=\"{}\" role=\"img\" aria-label=\"{}\" \
             width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
            escape(plot),
            escape(label),
            num(width),
            num(height),
            num(width),
            num(height),
        );
        Svg { buf }
    }

    /// A rectangle of class `class`, with an optional tooltip.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, class: &str, tip: Option<&str>) {
        let _ = write!(
            self.buf,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
            num(x),
            num(y),
            num(w.max(0.0)),
            num(h.max(0.0)),
        );
        self.close(tip, "rect");
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        let _ = writeln!(
            self.buf,
            "<line class=\"{class}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>",
            num(x1),
            num(y1),
            num(x2),
            num(y2),
        );
    }

    /// Text at (x, y) (its baseline), escaped, with an optional tooltip (a full name).
    pub fn text(&mut self, x: f64, y: f64, anchor: Anchor, class: &str, text: &str) {
        self.text_tip(x, y, anchor, class, text, None);
    }

    pub fn text_tip(
        &mut self,
        x: f64,
        y: f64,
        anchor: Anchor,
        class: &str,
        text: &str,
        tip: Option<&str>,
    ) {
        let _ = write!(
            self.buf,
            "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">",
            num(x),
            num(y),
            anchor.name(),
        );
        if let Some(tip) = tip {
            let _ = write!(self.buf, "<title>{}</title>", escape(tip));
        }
        self.buf.push_str(&escape(text));
        self.buf.push_str("</text>\n");
    }

    /// A text rotated a quarter turn counter-clockwise about (x, y): a y axis title.
    pub fn vertical_text(&mut self, x: f64, y: f64, class: &str, text: &str) {
        let _ = writeln!(
            self.buf,
            "<text class=\"{class}\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 {} {})\">{}</text>",
            num(x),
            num(y),
            num(x),
            num(y),
            escape(text),
        );
    }

    fn close(&mut self, tip: Option<&str>, element: &str) {
        match tip {
            Some(tip) => {
                let _ = writeln!(self.buf, "><title>{}</title></{element}>", escape(tip));
            }
            None => self.buf.push_str("/>\n"),
        }
    }

    pub fn finish(mut self) -> String {
        self.buf.push_str("</svg>\n");
        self.buf
    }
}

/// Ticks for an axis from 0 to `max`: about `target` of them at a 1-2-5 step, the last one at
/// or past `max`. Returns (ticks, step).
pub fn ticks(max: f64, target: usize) -> (Vec<f64>, f64) {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let rough = max / target.max(1) as f64;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    let count = (max / step).ceil() as usize;
    ((0..=count).map(|i| i as f64 * step).collect(), step)
}

/// A tick value with the decimals its step needs (no more).
pub fn tick_label(value: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{value:.decimals$}")
}

/// The unit a time axis speaks in, chosen from the largest duration it shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeUnit {
    pub name: &'static str,
    pub ns: f64,
}

impl TimeUnit {
    pub fn for_max(max_ns: f64) -> TimeUnit {
        let (name, ns) = if max_ns >= 1e9 {
            ("s", 1e9)
        } else if max_ns >= 1e6 {
            ("ms", 1e6)
        } else if max_ns >= 1e3 {
            ("µs", 1e3)
        } else {
            ("ns", 1.0)
        };
        TimeUnit { name, ns }
    }
}

/// A duration for people: three significant digits in the unit that suits it ("1.25 ms").
pub fn duration(ns: f64) -> String {
    let unit = TimeUnit::for_max(ns.abs());
    let v = ns / unit.ns;
    let decimals = if v.abs() >= 100.0 || unit.ns == 1.0 {
        0
    } else if v.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.decimals$} {}", unit.name)
}

/// A duration that is a whole number in its unit without decimals ("5 µs", "100 ms"); others
/// as [`duration`].
pub fn round_duration(ns: f64) -> String {
    let unit = TimeUnit::for_max(ns.abs());
    let v = ns / unit.ns;
    if v.fract() == 0.0 {
        format!("{v:.0} {}", unit.name)
    } else {
        duration(ns)
    }
}

/// A kernel name short enough for a label: the return type, template arguments and
/// parameter lists folded to `<…>` and `(…)`, leading namespaces dropped while it is too long,
/// then cut to `max` characters with `…`. The full name belongs in a tooltip.
pub fn short_name(name: &str, max: usize) -> String {
    let folded = fold_brackets(name.strip_prefix("void ").unwrap_or(name));
    // a name that is all brackets folds to nothing readable: cut the name itself instead
    let head = folded.find(['<', '(']).unwrap_or(folded.len());
    let mut base = if folded[..head].trim().is_empty() {
        name
    } else {
        folded.as_str()
    };
    while base.chars().count() > max {
        let head = base.find(['<', '(']).unwrap_or(base.len());
        match base[..head].find("::") {
            Some(at) => base = &base[at + 2..],
            None => break,
        }
    }
    if base.chars().count() <= max {
        return base.to_string();
    }
    let mut cut: String = base.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `a<b<c>>::f(int)` -> `a<…>::f(…)`; an unbalanced name (`operator<`) comes back whole.
fn fold_brackets(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' | '(' => {
                if depth == 0 {
                    out.push(c);
                    out.push('…');
                }
                depth += 1;
            }
            '>' | ')' => {
                if depth == 0 {
                    return name.to_string();
                }
                depth -= 1;
                if depth == 0 {
                    out.push(c);
                }
            }
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    if depth != 0 {
        return name.to_string();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_both_quotes() {
        assert_eq!(
            escape(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;"
        );
        assert_eq!(escape("plain µs"), "plain µs");
    }

    #[test]
    fn text_and_tooltips_are_escaped() {
        let mut svg = Svg::new("p", 10.0, 10.0, "a <label>");
        svg.text_tip(1.0, 2.0, Anchor::Start, "t", "x<y>", Some("</title><b>"));
        svg.rect(0.0, 0.0, 1.0, 1.0, "mark", Some("&"));
        let out = svg.finish();
        assert!(out.contains("aria-label=\"a &lt;label&gt;\""));
        assert!(out.contains("<title>&lt;/title&gt;&lt;b&gt;</title>x&lt;y&gt;</text>"));
        assert!(out.contains("<title>&amp;</title></rect>"));
        assert!(!out.contains("<b>"));
    }

    #[test]
    fn coordinates_have_one_decimal_at_most() {
        assert_eq!(num(1.25), "1.2");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(-0.01), "0");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn ticks_step_in_one_two_five_and_cover_the_max() {
        let (t, step) = ticks(7.3, 5);
        assert_eq!(step, 2.0);
        assert_eq!(t, vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        let (t, step) = ticks(0.042, 4);
        assert!((step - 0.02).abs() < 1e-12);
        assert_eq!(t.len(), 4);
        assert!(*t.last().unwrap() >= 0.042);
        assert_eq!(tick_label(t[2], step), "0.04");
        assert_eq!(tick_label(40.0, 10.0), "40");
        // an empty axis still has a unit range
        assert_eq!(ticks(0.0, 5).0.last(), Some(&1.0));
    }

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration(512.0), "512 ns");
        assert_eq!(duration(1_500.0), "1.50 µs");
        assert_eq!(duration(25_300_000.0), "25.3 ms");
        assert_eq!(duration(2_000_000_000.0), "2.00 s");
        assert_eq!(TimeUnit::for_max(3e6).name, "ms");
        assert_eq!(round_duration(5_000.0), "5 µs");
        assert_eq!(round_duration(100_000_000.0), "100 ms");
        assert_eq!(round_duration(1_500.0), "1.50 µs");
        assert_eq!(TimeUnit::for_max(999.0).name, "ns");
    }

    #[test]
    fn kernel_names_fold_templates_and_arguments() {
        assert_eq!(
            short_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
                60
            ),
            "at::native::vectorized_elementwise_kernel<…>(…)"
        );
        assert_eq!(
            short_name("void at::native::vectorized_elementwise_kernel<4>(int)", 40),
            "vectorized_elementwise_kernel<…>(…)"
        );
        assert_eq!(short_name("a::b::c", 4), "b::c");
        assert_eq!(short_name("operator<", 60), "operator<");
        assert_eq!(short_name("<img src=x>", 8), "<img sr…");
        assert_eq!(short_name("abcdefghij", 5), "abcd…");
        assert_eq!(short_name("ααααααα", 4).chars().count(), 4);
    }
}
