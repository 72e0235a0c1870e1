//! `traceEvents` scanned in runs, one per core: each run but the first starts at a guessed
//! event start and counts only when the run before it lands exactly there, which proves the
//! guess right; a run that passes its successor's start without landing on it scans on to
//! the list's end alone.

use super::{scan_event, Doc, Event, Taken};
use crate::import::kineto::map::Class;
use crate::import::kineto::scan::{Scanned, Scanner};

impl<'a> Doc<'a> {
    /// The events of `traceEvents`, scanned in runs from the guesses of [`run_starts`].
    pub(super) fn scan_events(&mut self, s: &mut Scanner<'a>) -> Scanned<()> {
        if !s.open(b'[', b']', "traceEvents is not a list")? {
            return Ok(());
        }
        let cores = crate::threads::cores();
        let starts = run_starts(s.text, s.at, cores);
        self.scan_runs(s, &starts)
    }

    /// Scan the events from the cursor, in runs starting at the cursor and at `starts`.
    fn scan_runs(&mut self, s: &mut Scanner<'a>, starts: &[usize]) -> Scanned<()> {
        let stop = |i: usize| starts.get(i).copied().unwrap_or(usize::MAX);
        std::thread::scope(|scope| {
            let path = self.path;
            let text = s.text;
            let later: Vec<_> = (0..starts.len())
                .map(|i| {
                    scope.spawn(move || {
                        let mut run = Doc::empty(path);
                        let mut scanner = Scanner::new(text);
                        scanner.at = starts[i];
                        let landed = run.scan_run(&mut scanner, stop(i + 1));
                        (run, scanner.at, landed)
                    })
                })
                .collect();
            let mut landed = self.scan_run(s, stop(0))?;
            for run in later {
                let (run, end, run_landed) = run
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                if landed {
                    landed = run_landed?;
                    self.append(run);
                    s.at = end;
                }
            }
            Ok(())
        })
    }

    /// Scan events from the cursor to the list's closing `]` (false), or until the cursor is
    /// at an event starting at byte `stop` (true).
    fn scan_run(&mut self, s: &mut Scanner<'a>, stop: usize) -> Scanned<bool> {
        loop {
            let start = s.at;
            if start == stop {
                return Ok(true);
            }
            let fields = scan_event(s)?;
            let index = self.events.len();
            let text = &s.text[start..s.at];
            self.events.push(text);
            let class =
                fields
                    .and_then(|f| Some((Event::from_fields(&f)?, f)))
                    .map(|(ev, fields)| {
                        let class = self.note(index, &ev);
                        if !matches!(class, Class::Cpu | Class::LaunchFlow { .. }) {
                            self.taken.push(Taken::new(index, class, text, &fields));
                        }
                        class
                    });
            self.classes.push(class);
            if !s.next_or_close(b']', "expected `,` or `]`")? {
                return Ok(false);
            }
        }
    }

    /// The events of `run`, which come right after this doc's.
    fn append(&mut self, run: Doc<'a>) {
        let offset = self.events.len();
        self.events.extend(run.events);
        self.classes.extend(run.classes);
        self.taken.extend(run.taken.into_iter().map(|t| Taken {
            index: t.index + offset,
            ..t
        }));
        self.flows.extend(
            run.flows
                .into_iter()
                .map(|(i, start, id)| (i + offset, start, id)),
        );
        self.extent = match (self.extent, run.extent) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (one, other) => one.or(other),
        };
    }
}

/// A run this short scans in ~1 ms, much more than a thread costs to start and join.
const MIN_RUN: usize = 1 << 20;

/// Where the runs after the first of an events list starting at byte `from` may start: one
/// per further core, each the first `{` that opens a line after a `},` line end past its
/// share of the text (how Kineto writes its events), and only for a text of at least
/// MIN_RUN bytes a run. A guess may fall inside an event: [`Doc::scan_events`] checks it.
fn run_starts(text: &str, from: usize, cores: usize) -> Vec<usize> {
    let bytes = text.as_bytes();
    let len = bytes.len().saturating_sub(from);
    let runs = cores.min(len / MIN_RUN).max(1);
    let mut starts: Vec<usize> = Vec::with_capacity(runs - 1);
    for k in 1..runs {
        let share = from + len / runs * k;
        let past = starts.last().map_or(share, |&last| share.max(last + 1));
        let guess = memchr::memmem::find_iter(&bytes[past..], b"},\n").find_map(|i| {
            let mut at = past + i + 3;
            while let Some(b' ' | b'\t' | b'\r' | b'\n') = bytes.get(at) {
                at += 1;
            }
            (bytes.get(at) == Some(&b'{')).then_some(at)
        });
        match guess {
            Some(at) => starts.push(at),
            None => break,
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn events_scanned_in_runs_are_the_events_scanned_in_one_whatever_the_guessed_starts() {
        let text = "{\"traceEvents\": [\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1, \"dur\": 2},\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"args\": {\"a\": [\n  {\"b\": 1},\n  {\"c\": 2}]}},\n  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"ts\": 5, \"dur\": 1}\n], \"z\": 1}";
        let path = Path::new("t.json");
        let one = Doc::parse(text.as_bytes(), path).unwrap();
        let event_starts: Vec<usize> = one
            .events
            .iter()
            .map(|e| e.as_ptr() as usize - text.as_ptr() as usize)
            .collect();
        let inside = text.find("{\"c\"").unwrap();
        let list = text.find('[').unwrap() + 1;
        // guesses on event starts, inside an event, and both
        for starts in [
            vec![event_starts[1]],
            vec![event_starts[1], event_starts[2]],
            vec![inside],
            vec![event_starts[1], inside],
            vec![inside, event_starts[2]],
        ] {
            let mut doc = Doc::empty(path);
            let mut s = Scanner::new(text);
            s.at = list;
            s.ws();
            doc.scan_runs(&mut s, &starts).unwrap();
            assert_eq!(doc.events, one.events, "{starts:?}");
            assert_eq!(doc.classes, one.classes);
            let taken = |d: &Doc| {
                d.taken
                    .iter()
                    .map(|t| (t.index, t.class))
                    .collect::<Vec<_>>()
            };
            assert_eq!(taken(&doc), taken(&one));
            assert_eq!(doc.extent, one.extent);
            assert_eq!(&text[s.at..], ", \"z\": 1}", "{starts:?}");
        }
        // a JSON error after a proven start is still the error, and where it is
        let bad = text.replace("\"dur\": 1}", "\"dur\": }");
        let mut doc = Doc::empty(path);
        let mut s = Scanner::new(&bad);
        s.at = list;
        s.ws();
        let fault = doc.scan_runs(&mut s, &[event_starts[2]]).unwrap_err();
        assert_eq!(fault.at, bad.find("\"dur\": }").unwrap() + 7);
    }

    #[test]
    fn long_lists_in_kineto_layout_get_a_run_per_core_each_on_an_event_start() {
        let event =
            "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"args\": {\n      \"a\": 1\n    }\n  }";
        let n = 3 * MIN_RUN / event.len();
        let text = format!("{{\"traceEvents\": [\n{}\n]}}", vec![event; n].join(",\n"));
        let from = text.find('[').unwrap() + 2;
        assert!(run_starts(&text, from, 1).is_empty());
        assert!(run_starts(&text[..from + MIN_RUN], from, 4).is_empty());
        for cores in [2, 3, 8] {
            let starts = run_starts(&text, from, cores);
            // three MiB make three runs at most
            assert_eq!(starts.len(), cores.min(3) - 1, "{cores}");
            assert!(starts.windows(2).all(|w| w[0] < w[1]));
            for at in starts {
                assert!(text[at..].starts_with(event.trim_start()), "{at}");
            }
        }
    }
}
