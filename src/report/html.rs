//! Stage `report` (HTML): report outputs in, one self-contained HTML page out: a header (the
//! source and the tracesql version; no clock, so the same input gives the same bytes), a table
//! of contents, then per report its title, its plot (inline SVG, `plots`) and its table (every
//! column, the first [`MAX_ROWS`] rows, and a line saying how many more there are). Nothing is
//! fetched at view time: no script, no external link, and a Content-Security-Policy that says so.

use std::collections::BTreeSet;
use std::fmt::Write;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

use super::plots::{plot, Outcome, PLOTTED};
use super::svg::escape;
use super::ReportOutput;

/// Rows of a report's table shown on the page; the rest are counted.
pub const MAX_ROWS: usize = 100;

const STYLE: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;margin:24px 32px;max-width:1400px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:36px 0 4px;border-bottom:1px solid #ddd;padding-bottom:4px}
h2 code{font-size:13px;color:#666;font-weight:normal;margin-left:8px}
.meta,.note,.caption{color:#555}.note{font-style:italic}
nav ul{margin:6px 0;padding-left:20px}
.table-wrap{overflow-x:auto;max-height:480px;overflow-y:auto;border:1px solid #ddd}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f4f4f4;position:sticky;top:0}td{max-width:46em;overflow-wrap:anywhere}
td.num{text-align:right;white-space:nowrap}td.null{color:#aaa}
figure{margin:8px 0 12px}figcaption{margin-top:2px}
svg.plot{display:block;max-width:100%;height:auto;margin:8px 0}
svg text{font:11.5px system-ui,sans-serif;fill:#333}
svg .axis-title{font-size:12.5px;fill:#444}svg .legend{fill:#555}
svg .tick{fill:#666}svg .value{fill:#444}
svg .inbar{fill:#fff;font-size:11px}svg .inbar.dark{fill:#333}
svg .grid{stroke:#e6e6e6}svg .axis{stroke:#888}svg .lane{fill:#f3f4f6}
svg .mark{fill:#3b6fc4}svg .mark:hover{fill:#1d4690}
svg .idle{fill:#c9ccd1}svg .compute{fill:#3b6fc4}svg .noncompute{fill:#e8893a}
svg .cpu{fill:#8a5cc2}svg .comm{fill:#2a9d8f}
svg .worse{fill:#cf4b3c}svg .better{fill:#3a9a5b}svg .total{fill:#5b6472}svg .faint{opacity:.4}
svg .base{fill:#a3adbb}svg .new{fill:#3b6fc4}svg .whisker{stroke:#222;stroke-width:1.5}
";

/// The page for `outputs`, read from `source` (the window or archive path).
pub fn render(outputs: &[ReportOutput], source: &str) -> String {
    let absent: Vec<String> = PLOTTED
        .iter()
        .filter(|(name, _)| !outputs.iter().any(|o| o.name == *name))
        .map(|(name, what)| format!("{what} (<code>{name}</code>)"))
        .collect();
    let note = (!absent.is_empty()).then(|| {
        format!(
            "Not in this page, since their reports were not run: {}. \
             <code>tracesql report all --format html</code> has every plot.",
            absent.join(", ")
        )
    });
    page(
        "tracesql report",
        &format!("source: <code>{}</code>", escape(source)),
        &format!("tracesql report — {source}"),
        note.as_deref(),
        outputs,
    )
}

/// The page of `tracesql diff BASE NEW`: its outputs are the diff's tables, named after the
/// plots they have (`diff_summary`, `diff_step`, `diff_by_op`, ...).
pub fn render_diff(outputs: &[ReportOutput], base: &str, new: &str) -> String {
    page(
        "tracesql diff",
        &format!(
            "BASE: <code>{}</code> · NEW: <code>{}</code>",
            escape(base),
            escape(new)
        ),
        &format!("tracesql diff — {base} → {new}"),
        None,
        outputs,
    )
}

/// A page: `heading`, the `meta` line (HTML) and the version, the contents with an optional
/// `note` (HTML), then a section per output.
fn page(
    heading: &str,
    meta: &str,
    title: &str,
    note: Option<&str>,
    outputs: &[ReportOutput],
) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"tracesql {version}\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>{title}</title>\n<style>\n{STYLE}</style>\n\
         </head>\n<body>\n<header>\n<h1>{heading}</h1>\n\
         <p class=\"meta\">{meta} · tracesql {version}</p>\n</header>\n",
        version = env!("CARGO_PKG_VERSION"),
        title = escape(title),
        heading = escape(heading),
    );

    let anchors = anchors(outputs);
    page.push_str("<nav>\n<h2>Contents</h2>\n<ul>\n");
    for (out, anchor) in outputs.iter().zip(&anchors) {
        let rows = out.num_rows();
        let _ = writeln!(
            page,
            "<li><a href=\"#{anchor}\">{}</a> — {} ({rows} {})</li>",
            escape(&out.name),
            escape(&out.title),
            if rows == 1 { "row" } else { "rows" },
        );
    }
    page.push_str("</ul>\n");
    if let Some(note) = note {
        let _ = writeln!(page, "<p class=\"note\">{note}</p>");
    }
    page.push_str("</nav>\n");

    for (out, anchor) in outputs.iter().zip(&anchors) {
        section(&mut page, out, anchor);
    }
    page.push_str("</body>\n</html>\n");
    page
}

/// A unique fragment id per report, from its name.
fn anchors(outputs: &[ReportOutput]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    outputs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let slug: String = out
                .name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            let mut anchor = format!("report-{slug}");
            if !seen.insert(anchor.clone()) {
                anchor = format!("report-{slug}-{i}");
                seen.insert(anchor.clone());
            }
            anchor
        })
        .collect()
}

fn section(page: &mut String, out: &ReportOutput, anchor: &str) {
    let _ = writeln!(
        page,
        "<section id=\"{anchor}\">\n<h2>{}<code>{}</code></h2>",
        escape(&out.title),
        escape(&out.name),
    );
    match plot(out) {
        Some(Outcome::Drawn(plot)) => {
            let _ = writeln!(
                page,
                "<figure>\n{}<figcaption class=\"caption\">{}</figcaption>\n</figure>",
                plot.svg,
                escape(&plot.caption)
            );
        }
        Some(Outcome::Not(why)) => {
            let _ = writeln!(page, "<p class=\"note\">{}</p>", escape(&why));
        }
        None => {}
    }
    table(page, out);
    page.push_str("</section>\n");
}

fn table(page: &mut String, out: &ReportOutput) {
    let total = out.num_rows();
    if total == 0 {
        page.push_str("<p class=\"note\">No rows.</p>\n");
    }
    page.push_str("<div class=\"table-wrap\">\n<table>\n<thead><tr>");
    for field in out.schema.fields() {
        let _ = write!(
            page,
            "<th title=\"{}\">{}</th>",
            escape(&field.data_type().to_string()),
            escape(field.name())
        );
    }
    page.push_str("</tr></thead>\n<tbody>\n");
    let mut shown = 0;
    for batch in &out.batches {
        if shown == MAX_ROWS {
            break;
        }
        let take = (MAX_ROWS - shown).min(batch.num_rows());
        rows(page, batch, take);
        shown += take;
    }
    page.push_str("</tbody>\n</table>\n</div>\n");
    if total > shown {
        let more = total - shown;
        let _ = writeln!(
            page,
            "<p class=\"note\">{more} more {} not shown ({total} in all) — use \
             <code>--format csv</code> for every row.</p>",
            if more == 1 { "row" } else { "rows" },
        );
    }
}

fn rows(page: &mut String, batch: &RecordBatch, take: usize) {
    let options = FormatOptions::default();
    let formatters: Vec<Option<ArrayFormatter>> = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).ok())
        .collect();
    for row in 0..take {
        page.push_str("<tr>");
        for (column, formatter) in batch.columns().iter().zip(&formatters) {
            let class = if column.data_type().is_numeric() {
                " class=\"num\""
            } else {
                ""
            };
            if column.is_null(row) {
                page.push_str("<td class=\"null\">NULL</td>");
                continue;
            }
            let text = match column.data_type() {
                DataType::Float64 => float(column.as_primitive::<Float64Type>().value(row)),
                DataType::Float32 => float(column.as_primitive::<Float32Type>().value(row) as f64),
                _ => formatter
                    .as_ref()
                    .and_then(|f| f.value(row).try_to_string().ok())
                    .unwrap_or_else(|| "(unprintable)".to_string()),
            };
            let _ = write!(page, "<td{class}>{}</td>", escape(&text));
        }
        page.push_str("</tr>\n");
    }
}

/// A float for a table cell: three decimals, trailing zeros dropped (percentages, ratios).
fn float(v: f64) -> String {
    if !v.is_finite() || (v != 0.0 && v.abs() < 1e-3) {
        return v.to_string();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::sample::{self, marks};
    use super::*;

    const NASTY: &str = "void k<\"a\" & 'b'></script><script>alert(1)</script>(int*)";

    fn all() -> Vec<ReportOutput> {
        vec![
            sample::gpu_utilization(),
            sample::kernel_summary(&[NASTY, "gemm<float>"]),
            sample::launch_stats(&[Some(1500), None, Some(30_000)]),
            sample::temporal_breakdown(&[("h1", [1, 2, 3])]),
            sample::critical_path_summary(&[(0, 0, "cpu", 1), (0, 0, "launch_overhead", 1)]),
        ]
    }

    #[test]
    fn names_and_source_are_escaped_everywhere() {
        let page = render(&all(), "runs/<rank>&\"x\"");
        assert!(!page.contains("<script"));
        assert!(!page.contains("alert(1)</script>"));
        assert!(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("k&lt;&quot;a&quot; &amp; &#39;b&#39;&gt;"));
        assert!(page.contains("<code>runs/&lt;rank&gt;&amp;&quot;x&quot;</code>"));
        // the label is folded, the full name is the tooltip
        assert!(page.contains("<title>gemm&lt;float&gt;</title>gemm&lt;…&gt;</text>"));
        assert!(
            page.contains("<title>void k&lt;&quot;a&quot; &amp; &#39;b&#39;&gt;&lt;/script&gt;")
        );
    }

    #[test]
    fn same_input_same_page() {
        let a = render(&all(), "w");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let b = render(&all(), "w");
        assert_eq!(a, b);
        assert!(a.contains(concat!("tracesql ", env!("CARGO_PKG_VERSION"))));
    }

    #[test]
    fn every_plot_is_drawn_with_its_marks() {
        let page = render(&all(), "w");
        assert_eq!(marks(&page, "gpu_utilization"), 9);
        assert_eq!(marks(&page, "kernel_summary"), 2);
        assert_eq!(marks(&page, "launch_stats"), 2);
        assert_eq!(marks(&page, "temporal_breakdown"), 3);
        assert_eq!(marks(&page, "critical_path_summary"), 2);
        assert!(!page.contains("Not in this page"));
        for anchor in ["gpu_utilization", "kernel_summary", "launch_stats"] {
            assert!(page.contains(&format!("<a href=\"#report-{anchor}\">")));
            assert!(page.contains(&format!("<section id=\"report-{anchor}\">")));
        }
    }

    #[test]
    fn absent_and_empty_reports_are_said_so() {
        let page = render(&[], "w");
        for name in [
            "gpu_utilization",
            "kernel_summary",
            "launch_stats",
            "temporal_breakdown",
        ] {
            assert!(page.contains(&format!("(<code>{name}</code>)")), "{name}");
        }
        assert!(page.contains("Not in this page"));
        assert!(!page.contains("<svg"));

        let page = render(&[sample::kernel_summary(&[])], "w");
        assert!(page.contains("The report has no rows: no plot."));
        assert!(page.contains("<p class=\"note\">No rows.</p>"));
        assert!(page.contains("(0 rows)"));
        assert!(!page.contains("<svg"));
    }

    #[test]
    fn nulls_show_as_null_cells() {
        let page = render(&[sample::launch_stats(&[None, Some(5)])], "w");
        let body = &page[page.find("<tbody>").unwrap()..page.find("</tbody>").unwrap()];
        assert_eq!(body.matches("<td class=\"null\">NULL</td>").count(), 1);
        assert!(body.contains("<td class=\"num\">5</td>"));
    }

    #[test]
    fn a_table_shows_a_hundred_rows_and_counts_the_rest() {
        let names: Vec<String> = (0..250).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut out = sample::kernel_summary(&refs);
        // split across batches: the cut spans them
        let batch = out.batches.remove(0);
        out.batches = vec![batch.slice(0, 60), batch.slice(60, 190)];
        let page = render(&[out], "w");
        let body = &page[page.find("<tbody>").unwrap()..page.find("</tbody>").unwrap()];
        assert_eq!(body.matches("<tr>").count(), MAX_ROWS);
        assert!(body.contains("<td>k99</td>"));
        assert!(!body.contains("<td>k100</td>"));
        assert!(
            page.contains("150 more rows not shown (250 in all) — use <code>--format csv</code>")
        );
    }

    #[test]
    fn every_column_has_a_header() {
        let page = render(&[sample::gpu_utilization()], "w");
        let head = &page[page.find("<thead>").unwrap()..page.find("</thead>").unwrap()];
        assert_eq!(head.matches("<th ").count(), 7);
        assert!(head.contains(">busy_pct</th>"));
        assert!(page.contains("<td class=\"num\">12.5</td>") || page.contains(">50</td>"));
    }

    #[test]
    fn nothing_is_fetched_at_view_time() {
        let page = render(&all(), "w");
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(!page.contains("<script") && !page.contains("url("));
        for attr in ["src=\"", "href=\""] {
            for (at, _) in page.match_indices(attr) {
                let value = &page[at + attr.len()..];
                assert!(
                    value.starts_with('#') || value.starts_with("data:"),
                    "{attr}{}",
                    &value[..value.len().min(40)]
                );
            }
        }
        assert!(page.contains("content=\"default-src 'none';"));
    }

    #[test]
    fn floats_keep_three_decimals_at_most() {
        assert_eq!(float(33.333333333), "33.333");
        assert_eq!(float(50.0), "50");
        assert_eq!(float(0.0), "0");
        assert_eq!(float(0.0001), "0.0001");
        assert_eq!(float(-0.0001), "-0.0001");
        assert_eq!(float(f64::NAN), "NaN");
    }
}
