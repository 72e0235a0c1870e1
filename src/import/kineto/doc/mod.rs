//! Parse a Kineto trace: its top-level members in order as raw JSON text, and `traceEvents`
//! as one raw text per event, with what the window needs of each.
//! Nothing is re-encoded: what is not mapped into the window is copied out as written.

mod runs;

use std::borrow::Cow;
use std::path::Path;

use serde_json::value::RawValue;

use super::json;
use super::map::{self, Class};
use super::scan::{Fault, Scanned, Scanner};
use crate::catalog::cpu_trace::{micros_text_to_ns, parse_int};
use crate::error::Error;
use crate::Result;

/// A top-level member of the trace: its key, and its value as written.
pub enum Member<'a> {
    Raw(String, &'a str),
    /// Where `traceEvents` stood among the members.
    Events,
}

/// A parsed trace, borrowing its decompressed bytes.
pub struct Doc<'a> {
    pub path: &'a Path,
    pub members: Vec<Member<'a>>,
    /// The events of `traceEvents`, each as written.
    pub events: Vec<&'a str>,
    /// Each event's class; None for an entry no reader takes (not an object of distinct
    /// keys, or a non-string `ph`, `cat` or `name`).
    pub classes: Vec<Option<Class>>,
    /// The events the window takes (GPU ops, API calls, ...), in order, with their fields.
    pub taken: Vec<Taken>,
    /// Launch flow events with an integer id: (event index, is the start, id).
    pub flows: Vec<(usize, bool, i64)>,
    /// The first start and last end over the timed events but metadata, in ns from the
    /// trace's base.
    pub extent: Option<(i64, i64)>,
    /// `baseTimeNanoseconds`, when the trace has it.
    pub base_ns: Option<i64>,
}

impl<'a> Doc<'a> {
    /// Parse a trace in one pass that validates the whole text as JSON and classifies every
    /// event; errors name the file and the byte offset.
    pub fn parse(bytes: &'a [u8], path: &'a Path) -> Result<Self> {
        let bad = |reason: String| Error::BadCpuTrace {
            file: path.to_path_buf(),
            reason,
        };
        let text = std::str::from_utf8(bytes)
            .map_err(|e| bad(format!("invalid UTF-8 at byte {}", e.valid_up_to())))?;
        let mut doc = Doc::empty(path);
        let mut s = Scanner::new(text);
        let has_events = doc
            .scan(&mut s)
            .map_err(|fault| json_error(bytes, path, &fault))?;
        if !has_events {
            return Err(bad("no traceEvents list (not a Kineto trace?)".into()));
        }
        for member in &doc.members {
            if let Member::Raw(key, raw) = member {
                if key == "baseTimeNanoseconds" {
                    let value = parse_int(raw).ok_or_else(|| {
                        bad(format!("baseTimeNanoseconds {raw} is not an integer"))
                    })?;
                    doc.base_ns = Some(value);
                }
            }
        }
        Ok(doc)
    }

    /// The raw value of top-level member `key` (the last one when repeated).
    pub fn member(&self, key: &str) -> Option<&'a str> {
        self.members.iter().rev().find_map(|m| match m {
            Member::Raw(k, raw) if k == key => Some(*raw),
            _ => None,
        })
    }

    /// `distributedInfo.rank`, when the trace has an integer one.
    pub fn rank(&self) -> Option<i64> {
        #[derive(serde::Deserialize)]
        struct Info<'b> {
            #[serde(borrow, default)]
            rank: Option<&'b RawValue>,
        }
        let info: Info = serde_json::from_str(self.member("distributedInfo")?).ok()?;
        parse_int(info.rank?.get())
    }

    /// The top-level object: its members, and each event of `traceEvents`; returns whether
    /// there was a `traceEvents`.
    fn scan(&mut self, s: &mut Scanner<'a>) -> Scanned<bool> {
        let mut has_events = false;
        s.ws();
        if s.open(b'{', b'}', "expected a Kineto trace (a JSON object)")? {
            loop {
                let key_at = s.at;
                let (key, escaped) = s.key()?;
                let key = json::decode(key, escaped);
                if key == "traceEvents" {
                    if has_events {
                        s.at = key_at;
                        return Err(s.fault("traceEvents appears twice"));
                    }
                    has_events = true;
                    self.scan_events(s)?;
                    self.members.push(Member::Events);
                } else {
                    let value = s.value()?;
                    self.members.push(Member::Raw(key.into_owned(), value));
                }
                if !s.next_or_close(b'}', "expected `,` or `}`")? {
                    break;
                }
            }
        }
        s.ws();
        if s.at != s.text.len() {
            return Err(s.fault("trailing characters"));
        }
        Ok(has_events)
    }

    fn empty(path: &'a Path) -> Self {
        Doc {
            path,
            members: Vec::new(),
            events: Vec::new(),
            classes: Vec::new(),
            taken: Vec::new(),
            flows: Vec::new(),
            extent: None,
            base_ns: None,
        }
    }

    /// What the window needs of every event as it passes: its class, its time extent, the
    /// ids of launch flows.
    fn note(&mut self, index: usize, ev: &Event<'a>) -> Class {
        let class = map::classify(ev);
        if let Class::LaunchFlow { start } = class {
            if let Some(id) = ev.id.and_then(parse_int) {
                self.flows.push((index, start, id));
            }
        }
        if ev.ph.as_deref() != Some("M") {
            if let Some(start) = ev.ts.and_then(micros_text_to_ns) {
                let dur = ev.dur.and_then(micros_text_to_ns).unwrap_or(0).max(0);
                let end = start.saturating_add(dur);
                let (first, last) = self.extent.unwrap_or((start, end));
                self.extent = Some((first.min(start), last.max(end)));
            }
        }
        class
    }
}

/// Past the event at the cursor, validated; its fields when it is an object of distinct keys
/// among the fields (what readers take).
fn scan_event<'a>(s: &mut Scanner<'a>) -> Scanned<Option<Fields<'a>>> {
    if s.peek("a value")? != b'{' {
        s.value()?;
        return Ok(None);
    }
    let mut fields = [None; 9];
    let mut distinct = true;
    if s.open(b'{', b'}', "an object")? {
        loop {
            let (key, escaped) = s.key()?;
            let value = s.value()?;
            distinct = distinct && collect(&mut fields, &json::decode(key, escaped), value);
            if !s.next_or_close(b'}', "expected `,` or `}`")? {
                break;
            }
        }
    }
    Ok(distinct.then_some(fields))
}

/// A JSON error as one line: the reason and where, as a byte offset (and line and column).
fn json_error(bytes: &[u8], path: &Path, fault: &Fault) -> Error {
    let reason = if fault.eof {
        format!(
            "truncated JSON: {} (input ends at byte {})",
            fault.reason,
            bytes.len()
        )
    } else {
        let line_start = bytes[..fault.at]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let line = 1 + bytes[..line_start].iter().filter(|b| **b == b'\n').count();
        format!(
            "invalid JSON at byte {} (line {line}, column {}): {}",
            fault.at,
            fault.at - line_start + 1,
            fault.reason
        )
    };
    Error::BadCpuTrace {
        file: path.to_path_buf(),
        reason,
    }
}

/// The fields of one event the importer looks at; the rest stays in its raw text. Values
/// are JSON text as written (`ts`, `args`, ...) or decoded strings (`ph`, `cat`, `name`).
#[derive(Default)]
pub struct Event<'a> {
    pub ph: Option<Cow<'a, str>>,
    pub cat: Option<Cow<'a, str>>,
    pub name: Option<Cow<'a, str>>,
    pub pid: Option<&'a str>,
    pub tid: Option<&'a str>,
    pub ts: Option<&'a str>,
    pub dur: Option<&'a str>,
    pub id: Option<&'a str>,
    pub args: Option<&'a str>,
}

impl<'a> Event<'a> {
    /// The fields of `raw` (valid JSON); None when it is not an object of distinct keys among
    /// these fields, or `ph`, `cat` or `name` is not a string (what serde would reject).
    pub fn parse(raw: &'a str) -> Option<Self> {
        let mut fields = [None; 9];
        for (key, value) in json::members(raw)? {
            if !collect(&mut fields, &key, value) {
                return None;
            }
        }
        Event::from_fields(&fields)
    }

    /// The event of its fields as written; None when `ph`, `cat` or `name` is not a string.
    fn from_fields(f: &Fields<'a>) -> Option<Self> {
        let string = |raw: Option<&'a str>| raw.map_or(Some(None), text);
        let value = |raw: Option<&'a str>| raw.filter(|v| *v != "null");
        Some(Event {
            ph: string(f[0])?,
            cat: string(f[1])?,
            name: string(f[2])?,
            pid: value(f[3]),
            tid: value(f[4]),
            ts: value(f[5]),
            dur: value(f[6]),
            id: value(f[7]),
            args: value(f[8]),
        })
    }
}

/// The members of an event the importer reads, as written: `ph`, `cat`, `name`, `pid`,
/// `tid`, `ts`, `dur`, `id`, `args`.
type Fields<'a> = [Option<&'a str>; 9];

/// Put member `key: value` into `fields` when it is one; false when it is one already there.
fn collect<'a>(fields: &mut Fields<'a>, key: &str, value: &'a str) -> bool {
    let field = match key {
        "ph" => 0,
        "cat" => 1,
        "name" => 2,
        "pid" => 3,
        "tid" => 4,
        "ts" => 5,
        "dur" => 6,
        "id" => 7,
        "args" => 8,
        _ => return true,
    };
    fields[field].replace(value).is_none()
}

/// The fields the window needs of an event it takes (`name`, `pid`, `tid`, `ts`, `dur`,
/// `args`), kept by the parse as (offset, length) in the event's text: compact, and the map
/// need not walk the event again.
pub struct Taken {
    pub index: usize,
    pub class: Class,
    spans: [(u32, u32); 6],
}

/// The [`Fields`] a [`Taken`] keeps.
const TAKEN: [usize; 6] = [2, 3, 4, 5, 6, 8];
const ABSENT: (u32, u32) = (u32::MAX, 0);

impl Taken {
    fn new(index: usize, class: Class, event: &str, fields: &Fields) -> Self {
        let span = |field: Option<&str>| {
            field.map_or(ABSENT, |value| {
                // `value` lies inside `event`: its offset is the distance between the two.
                let offset = value.as_ptr() as usize - event.as_ptr() as usize;
                (offset as u32, value.len() as u32)
            })
        };
        Taken {
            index,
            class,
            spans: TAKEN.map(|field| span(fields[field])),
        }
    }

    /// The event back, from its text in `doc`.
    pub fn event<'a>(&self, doc: &Doc<'a>) -> Event<'a> {
        let text = doc.events[self.index];
        let mut fields = [None; 9];
        for (field, (offset, len)) in TAKEN.into_iter().zip(self.spans) {
            if (offset, len) != ABSENT {
                fields[field] = Some(&text[offset as usize..offset as usize + len as usize]);
            }
        }
        Event::from_fields(&fields).expect("the parse took these fields")
    }
}

/// A string field: Some(None) for null, None (the event is dropped) for any other non-string.
fn text(value: &str) -> Option<Option<Cow<'_, str>>> {
    match value.as_bytes()[0] {
        b'"' => Some(Some(json::unquote(value))),
        b'n' => Some(None),
        _ => None,
    }
}

/// An event's `args` members in order (key, value as written); empty when absent or not an
/// object.
pub struct Args<'a>(pub Vec<(Cow<'a, str>, &'a str)>);

impl<'a> Args<'a> {
    /// The members of `raw`, collected into `buffer` (a recycled one spares an allocation per
    /// event).
    pub fn parse(raw: Option<&'a str>, mut buffer: Vec<(Cow<'a, str>, &'a str)>) -> Self {
        buffer.clear();
        if let Some(members) = raw.and_then(json::members) {
            buffer.extend(members);
        }
        Args(buffer)
    }

    /// The emptied buffer, for the next [`Args::parse`].
    pub fn recycle(self) -> Vec<(Cow<'a, str>, &'a str)> {
        let mut buffer = self.0;
        buffer.clear();
        buffer
    }

    /// The raw value of `key` (the last one when repeated).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The integer value of `key`.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(parse_int)
    }

    /// The string value of `key`.
    pub fn text(&self, key: &str) -> Option<Cow<'a, str>> {
        self.get(key).and_then(|raw| text(raw).flatten())
    }

    /// `External id`, or the older spelling `external id`.
    pub fn external_id(&self) -> Option<i64> {
        self.int("External id").or_else(|| self.int("external id"))
    }

    /// The members whose keys are in none of `mapped`, as a JSON object's text; None when none.
    pub fn rest_as_object(&self, mapped: &[&[&str]]) -> Option<String> {
        let mut out = String::new();
        for (key, value) in &self.0 {
            if mapped.iter().any(|keys| keys.contains(&key.as_ref())) {
                continue;
            }
            out.push(if out.is_empty() { '{' } else { ',' });
            push_json_string(&mut out, key);
            out.push(':');
            out.push_str(value);
        }
        (!out.is_empty()).then(|| out + "}")
    }
}

/// `s` as a JSON string, escaped as serde_json escapes it.
fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string encodes"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_order_and_events_their_text() {
        let text = br#"{"a": 1, "traceEvents": [ {"ph": "X",  "ts": 1.5} , {"ph":"M"}], "z": [2]}"#;
        let doc = Doc::parse(text, Path::new("t.json")).unwrap();
        let keys: Vec<&str> = doc
            .members
            .iter()
            .map(|m| match m {
                Member::Raw(k, _) => k.as_str(),
                Member::Events => "<events>",
            })
            .collect();
        assert_eq!(keys, ["a", "<events>", "z"]);
        assert_eq!(doc.events[0], r#"{"ph": "X",  "ts": 1.5}"#);
        assert_eq!(doc.base_ns, None);
    }

    #[test]
    fn a_truncated_trace_says_where_it_ends() {
        let text = b"{\"traceEvents\": [\n{\"ph\": \"X\"},\n{\"ph\"";
        let err = Doc::parse(text, Path::new("cut.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(err.starts_with("cut.json: truncated JSON"), "{err}");
        assert!(err.contains(&format!("byte {}", text.len())), "{err}");
    }

    #[test]
    fn invalid_json_names_the_byte_offset() {
        let text = b"{\"traceEvents\": [\n{\"ph\": X}]}";
        let err = Doc::parse(text, Path::new("bad.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("invalid JSON at byte 25 (line 2, column 8)"),
            "{err}"
        );
    }

    #[test]
    fn a_lone_surrogate_escape_is_kept_as_written_not_a_crash() {
        let text = br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\ud800b"}]}"#;
        let doc = Doc::parse(text, Path::new("t.json")).unwrap();
        assert_eq!(doc.classes, [Some(Class::Cpu)]);
        let ev = Event::parse(doc.events[0]).unwrap();
        assert_eq!(ev.name.as_deref(), Some(r"a\ud800b"));
    }

    #[test]
    fn entries_no_reader_takes_are_classed_none() {
        let text = br#"{"traceEvents": [17, {"ph": "X", "ph": "X"}, {"ph": 1}, {"ph": "X", "cat": "kernel"}]}"#;
        let doc = Doc::parse(text, Path::new("t.json")).unwrap();
        assert_eq!(doc.classes, [None, None, None, Some(Class::Kernel)]);
    }

    #[test]
    fn args_split_into_mapped_and_rest() {
        let raw = r#"{"device": 0, "grid": [1,2,3], "warps per SM": 1.5}"#;
        let args = Args::parse(Some(raw), Vec::new());
        assert_eq!(args.int("device"), Some(0));
        assert_eq!(
            args.rest_as_object(&[&["device"], &["grid"]]).as_deref(),
            Some(r#"{"warps per SM":1.5}"#)
        );
        assert_eq!(
            args.rest_as_object(&[&["device", "grid", "warps per SM"]]),
            None
        );
    }
}
