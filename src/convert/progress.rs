//! Progress of a conversion on stderr: one line rewritten in place on a terminal, a plain
//! line every few seconds otherwise, nothing when quiet.

use std::io::Write;
use std::time::{Duration, Instant};

use super::{Outcome, WindowReport};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// one line rewritten in place (`\r`)
    Terminal,
    /// a line at most every `PLAIN_EVERY`, and one at the end
    Plain,
    Quiet,
}

const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Counts of finished windows, drawn as `12/40 windows (10 converted, 1 up to date,
/// 1 failed), 2.5/s, ETA 11 s`.
pub struct Progress {
    mode: ProgressMode,
    total: usize,
    converted: usize,
    up_to_date: usize,
    failed: usize,
    started: Instant,
    last_line: Option<Instant>,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: usize) -> Self {
        Progress {
            mode,
            total,
            converted: 0,
            up_to_date: 0,
            failed: 0,
            started: Instant::now(),
            last_line: None,
        }
    }

    /// Count `report` and redraw into `out` when the mode says so.
    pub fn done(&mut self, report: &WindowReport, out: &mut impl Write) {
        match report.outcome {
            Outcome::Converted => self.converted += 1,
            Outcome::UpToDate => self.up_to_date += 1,
            Outcome::Failed(_) => self.failed += 1,
        }
        let now = Instant::now();
        let line = self.line(now.duration_since(self.started));
        let _ = match self.mode {
            ProgressMode::Terminal => write!(out, "\r\x1b[2K{line}"),
            ProgressMode::Plain => {
                let due = self
                    .last_line
                    .is_none_or(|last| now.duration_since(last) >= PLAIN_EVERY);
                if !due && self.finished() < self.total {
                    return;
                }
                self.last_line = Some(now);
                writeln!(out, "{line}")
            }
            ProgressMode::Quiet => return,
        };
        let _ = out.flush();
    }

    /// End the in-place line so that what follows starts on a fresh one.
    pub fn finish(&self, out: &mut impl Write) {
        if self.mode == ProgressMode::Terminal && self.finished() > 0 {
            let _ = writeln!(out);
        }
    }

    fn finished(&self) -> usize {
        self.converted + self.up_to_date + self.failed
    }

    fn line(&self, elapsed: Duration) -> String {
        let done = self.finished();
        let secs = elapsed.as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let eta = if done == 0 {
            "?".to_string()
        } else {
            let left = (self.total - done) as f64 / rate;
            format!("{left:.0} s")
        };
        format!(
            "{done}/{} windows ({} converted, {} up to date, {} failed), {rate:.1}/s, ETA {eta}",
            self.total, self.converted, self.up_to_date, self.failed
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(outcome: Outcome) -> WindowReport {
        WindowReport {
            window: "w".into(),
            outputs: Vec::new(),
            outcome,
            events: 0,
        }
    }

    #[test]
    fn the_line_counts_outcomes_and_estimates_the_rest() {
        let mut p = Progress::new(ProgressMode::Quiet, 4);
        let mut sink = Vec::new();
        p.done(&report(Outcome::Converted), &mut sink);
        p.done(&report(Outcome::Failed("bad".into())), &mut sink);
        assert!(sink.is_empty(), "quiet writes nothing");
        assert_eq!(
            p.line(Duration::from_secs(4)),
            "2/4 windows (1 converted, 0 up to date, 1 failed), 0.5/s, ETA 4 s"
        );
    }

    #[test]
    fn plain_lines_are_periodic_and_the_last_is_always_written() {
        let mut p = Progress::new(ProgressMode::Plain, 3);
        let mut out = Vec::new();
        for _ in 0..3 {
            p.done(&report(Outcome::UpToDate), &mut out);
        }
        let text = String::from_utf8(out).unwrap();
        // the first (nothing written yet) and the last; the middle one is within 5 s
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().last().unwrap().starts_with("3/3 windows"));
        assert!(!text.contains('\r'));
    }

    #[test]
    fn a_terminal_line_is_rewritten_in_place() {
        let mut p = Progress::new(ProgressMode::Terminal, 2);
        let mut out = Vec::new();
        p.done(&report(Outcome::Converted), &mut out);
        p.done(&report(Outcome::Converted), &mut out);
        p.finish(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches('\r').count(), 2);
        assert_eq!(text.lines().count(), 1);
        assert!(text.ends_with("ETA 0 s\n"), "{text}");
    }
}
