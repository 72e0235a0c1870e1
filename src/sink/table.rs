//! Stage `sink`: the text layouts for people, batches in, text out. The aligned table shares
//! a width among its columns (long values end in `…`), the line layout shows one value per
//! line uncut; both stop after a row count and say how many rows they left out. Only the
//! rows shown are held.

use std::borrow::Cow;
use std::io::Write;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::error::Error;
use crate::Result;

/// How much of a result the text layouts show; the default shows everything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fit {
    /// Width in columns the whole table may take (a terminal's width); None: values in full.
    pub max_width: Option<usize>,
    /// Rows shown; the others are counted and reported in one line. None: every row.
    pub max_rows: Option<usize>,
}

/// Narrowest a cut column gets (with its `…`), however many columns share the width.
const MIN_COLUMN_WIDTH: usize = 4;

/// An aligned text table, fitted to [`Fit`].
pub struct TableWriter<W: Write> {
    out: W,
    names: Vec<String>,
    fit: Fit,
    rows: Vec<Vec<String>>,
    total: u64,
}

impl<W: Write> TableWriter<W> {
    pub fn new(out: W, schema: SchemaRef, fit: Fit) -> Self {
        let names = schema.fields().iter().map(|f| clean(f.name())).collect();
        TableWriter {
            out,
            names,
            fit,
            rows: Vec::new(),
            total: 0,
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let room = room(self.fit.max_rows, self.rows.len());
        let take = room.min(batch.num_rows());
        if take > 0 {
            let formatters = formatters(batch)?;
            for row in 0..take {
                let cells = formatters
                    .iter()
                    .map(|f| Ok(clean(&f.value(row).try_to_string()?)))
                    .collect::<Result<Vec<_>>>()?;
                self.rows.push(cells);
            }
        }
        self.total += batch.num_rows() as u64;
        Ok(())
    }

    /// Lay the table out and write it, with the line about rows left out when some were.
    pub fn finish(mut self) -> Result<()> {
        let natural: Vec<usize> = (0..self.names.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| lines_width(&r[c]))
                    .chain([lines_width(&self.names[c])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let widths = match self.fit.max_width {
            Some(max) => share_width(&natural, max),
            None => natural,
        };
        let mut text = String::new();
        let rule = rule(&widths);
        text.push_str(&rule);
        push_row(&mut text, &self.names, &widths);
        text.push_str(&rule);
        for row in &self.rows {
            push_row(&mut text, row, &widths);
        }
        if !self.rows.is_empty() {
            text.push_str(&rule);
        }
        self.out.write_all(text.as_bytes()).map_err(io_error)?;
        left_out(&mut self.out, self.rows.len() as u64, self.total)?;
        self.out.flush().map_err(io_error)
    }
}

/// One `name = value` line per column and a blank line between rows (sqlite's `.mode line`);
/// values are never cut.
pub struct LineWriter<W: Write> {
    out: W,
    names: Vec<String>,
    max_rows: Option<usize>,
    shown: usize,
    total: u64,
}

impl<W: Write> LineWriter<W> {
    pub fn new(out: W, schema: SchemaRef, max_rows: Option<usize>) -> Self {
        let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let width = names.iter().map(|n| n.width()).max().unwrap_or(0);
        let names = names
            .into_iter()
            .map(|n| format!("{}{n}", " ".repeat(width - n.width())))
            .collect();
        LineWriter {
            out,
            names,
            max_rows,
            shown: 0,
            total: 0,
        }
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let take = room(self.max_rows, self.shown).min(batch.num_rows());
        if take > 0 {
            let formatters = formatters(batch)?;
            let mut text = String::new();
            for row in 0..take {
                if self.shown > 0 {
                    text.push('\n');
                }
                for (name, f) in self.names.iter().zip(&formatters) {
                    text.push_str(name);
                    text.push_str(" = ");
                    text.push_str(&f.value(row).try_to_string()?);
                    text.push('\n');
                }
                self.shown += 1;
            }
            self.out.write_all(text.as_bytes()).map_err(io_error)?;
        }
        self.total += batch.num_rows() as u64;
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        left_out(&mut self.out, self.shown as u64, self.total)?;
        self.out.flush().map_err(io_error)
    }
}

/// The width of the terminal on standard output, if it is one (else `$COLUMNS`).
pub fn terminal_width() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: TIOCGWINSZ fills the winsize we own; on failure it is left zeroed.
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
        if ok && size.ws_col > 0 {
            return Some(size.ws_col as usize);
        }
    }
    std::env::var("COLUMNS").ok()?.parse().ok()
}

/// Column widths that, with the borders, fit in `max`: columns narrower than an even share
/// keep their width, the others split what is left (never below [`MIN_COLUMN_WIDTH`], so a
/// table of very many columns may still overflow).
pub fn share_width(natural: &[usize], max: usize) -> Vec<usize> {
    let borders = 3 * natural.len() + 1;
    let mut budget = max.saturating_sub(borders);
    if natural.iter().sum::<usize>() <= budget {
        return natural.to_vec();
    }
    let mut order: Vec<usize> = (0..natural.len()).collect();
    order.sort_by_key(|&c| natural[c]);
    let mut widths = natural.to_vec();
    for (k, &c) in order.iter().enumerate() {
        let open = order.len() - k;
        let share = budget / open;
        if natural[c] <= share {
            budget -= natural[c];
            continue;
        }
        // Every column from here on is wider than its share: split the rest evenly.
        let extra = budget % open;
        for (j, &c) in order[k..].iter().enumerate() {
            let even = share + usize::from(j >= open - extra);
            widths[c] = even.max(MIN_COLUMN_WIDTH.min(natural[c]));
        }
        break;
    }
    widths
}

/// `text` cut to `width` display columns, ending in `…` when cut.
pub fn cut(text: &str, width: usize) -> Cow<'_, str> {
    if text.width() <= width {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// One row; a cell of several lines (an EXPLAIN plan) makes the row as tall.
fn push_row(text: &mut String, cells: &[String], widths: &[usize]) {
    let height = cells
        .iter()
        .map(|c| c.lines().count())
        .max()
        .unwrap_or(1)
        .max(1);
    for line in 0..height {
        text.push('|');
        for (cell, &width) in cells.iter().zip(widths) {
            let shown = cut(cell.lines().nth(line).unwrap_or(""), width);
            text.push(' ');
            text.push_str(&shown);
            text.push_str(&" ".repeat(width - shown.width() + 1));
            text.push('|');
        }
        text.push('\n');
    }
}

fn lines_width(cell: &str) -> usize {
    cell.lines().map(|l| l.width()).max().unwrap_or(0)
}

fn rule(widths: &[usize]) -> String {
    let mut line = String::from("+");
    for w in widths {
        line.push_str(&"-".repeat(w + 2));
        line.push('+');
    }
    line.push('\n');
    line
}

fn room(max_rows: Option<usize>, shown: usize) -> usize {
    max_rows.map_or(usize::MAX, |max| max.saturating_sub(shown))
}

fn formatters(batch: &RecordBatch) -> Result<Vec<ArrayFormatter<'_>>> {
    let options = FormatOptions::default().with_null("NULL");
    Ok(batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()?)
}

/// A cell whose lines stay aligned: carriage returns and tabs shown as escapes (line breaks
/// make a taller row).
fn clean(text: &str) -> String {
    if !text.contains(['\r', '\t']) {
        return text.to_string();
    }
    text.replace('\r', "\\r").replace('\t', "\\t")
}

fn left_out(out: &mut impl Write, shown: u64, total: u64) -> Result<()> {
    if total > shown {
        let left = total - shown;
        let rows = if left == 1 { "row" } else { "rows" };
        writeln!(out, "({left} more {rows} not shown; {total} in all)").map_err(io_error)?;
    }
    Ok(())
}

fn io_error(e: std::io::Error) -> Error {
    Error::Write(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn batch(names: &[&str]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("name", DataType::Utf8, true),
            Field::new("n", DataType::Int64, true),
        ]);
        let n: Vec<i64> = (0..names.len() as i64).collect();
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(names.to_vec())),
                Arc::new(Int64Array::from(n)),
            ],
        )
        .unwrap()
    }

    fn table(batches: &[RecordBatch], fit: Fit) -> String {
        let mut out = Vec::new();
        let mut w = TableWriter::new(&mut out, batches[0].schema(), fit);
        for b in batches {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_table_fits_the_width_and_every_line_is_as_wide() {
        let long = format!("void gemm<{}>(float*)", "float, ".repeat(40));
        let text = table(
            &[batch(&[&long, "add"])],
            Fit {
                max_width: Some(60),
                max_rows: None,
            },
        );
        let widths: Vec<usize> = text.lines().map(|l| l.width()).collect();
        assert!(widths.iter().all(|w| *w == 60), "{text}");
        assert!(text.contains("| void gemm<float, float,"), "{text}");
        assert!(text.contains("…"), "{text}");
        assert!(text.contains("| add "), "{text}");
    }

    #[test]
    fn an_unfitted_table_shows_values_in_full() {
        let long = "k".repeat(300);
        let text = table(&[batch(&[&long])], Fit::default());
        assert!(text.contains(&long), "{text}");
        assert!(!text.contains('…'));
    }

    #[test]
    fn a_table_stops_at_max_rows_and_counts_the_rest() {
        let fit = Fit {
            max_width: None,
            max_rows: Some(3),
        };
        let text = table(&[batch(&["a", "b"]), batch(&["c", "d", "e"])], fit);
        assert!(text.contains("| c "), "{text}");
        assert!(!text.contains("| d "), "{text}");
        assert!(
            text.ends_with("(2 more rows not shown; 5 in all)\n"),
            "{text}"
        );
    }

    #[test]
    fn the_width_is_shared_evenly_among_the_wide_columns() {
        // borders: 3 * 3 + 1 = 10, budget 40: 4 stays, 36 split between the two wide ones
        assert_eq!(share_width(&[4, 100, 50], 50), vec![4, 18, 18]);
        assert_eq!(share_width(&[4, 10], 80), vec![4, 10]);
        assert_eq!(share_width(&[100, 100], 3), vec![4, 4]);
    }

    #[test]
    fn a_cell_of_several_lines_makes_a_taller_row() {
        let text = table(&[batch(&["Projection: a\n  Scan: kernel"])], Fit::default());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "| Projection: a  | 0 |", "{text}");
        assert_eq!(lines[4], "|   Scan: kernel |   |", "{text}");
    }

    #[test]
    fn cut_counts_display_columns_and_marks_the_cut() {
        assert_eq!(cut("gemm", 4), "gemm");
        assert_eq!(cut("gemm_kernel", 5), "gemm…");
        assert_eq!(cut("日本語テキスト", 5), "日本…");
    }

    #[test]
    fn line_mode_shows_one_value_a_line_uncut() {
        let long = "x".repeat(500);
        let b = batch(&[&long, "y"]);
        let mut out = Vec::new();
        let mut w = LineWriter::new(&mut out, b.schema(), Some(1));
        w.write(&b).unwrap();
        w.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            format!("name = {long}\n   n = 0\n(1 more row not shown; 2 in all)\n")
        );
    }
}
