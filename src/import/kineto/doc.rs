//! Read a Kineto trace: the file's bytes (gunzipped when they start with gzip's magic), its
//! top-level members in order as raw JSON text, and `traceEvents` as one raw text per event.
//! Nothing is re-encoded: what is not mapped into the window is copied out as written.

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::json;
use crate::catalog::cpu_trace::parse_int;
use crate::error::Error;
use crate::Result;

/// A top-level member of the trace: its key, and its value as written.
pub enum Member<'a> {
    Raw(String, &'a RawValue),
    /// Where `traceEvents` stood among the members.
    Events,
}

/// A parsed trace, borrowing its decompressed bytes.
pub struct Doc<'a> {
    pub path: &'a Path,
    pub members: Vec<Member<'a>>,
    pub events: Vec<&'a RawValue>,
    /// `baseTimeNanoseconds`, when the trace has it.
    pub base_ns: Option<i64>,
}

/// The bytes of the trace at `path`, decompressed when gzipped.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    // gzip's trailer holds the uncompressed size modulo 2^32: one allocation of the right size.
    let hint = raw
        .len()
        .checked_sub(4)
        .map(|at| u32::from_le_bytes(raw[at..].try_into().expect("4 bytes")) as usize)
        .filter(|n| *n >= raw.len())
        .unwrap_or(raw.len() * 8);
    let mut out = Vec::with_capacity(hint + 1);
    flate2::read::MultiGzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .map_err(|e| Error::BadCpuTrace {
            file: path.to_path_buf(),
            reason: format!("cannot gunzip ({e})"),
        })?;
    Ok(out)
}

impl<'a> Doc<'a> {
    /// Parse the top level of a trace; errors name the file and the byte offset.
    pub fn parse(bytes: &'a [u8], path: &'a Path) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let parsed = (&mut de)
            .deserialize_map(DocVisitor)
            .and_then(|doc| de.end().map(|()| doc))
            .map_err(|e| json_error(bytes, path, &e))?;
        let (members, events) = parsed;
        let bad = |reason: String| Error::BadCpuTrace {
            file: path.to_path_buf(),
            reason,
        };
        let events =
            events.ok_or_else(|| bad("no traceEvents list (not a Kineto trace?)".into()))?;
        let mut base_ns = None;
        for member in &members {
            if let Member::Raw(key, raw) = member {
                if key == "baseTimeNanoseconds" {
                    let value = parse_int(raw.get()).ok_or_else(|| {
                        bad(format!(
                            "baseTimeNanoseconds {} is not an integer",
                            raw.get()
                        ))
                    })?;
                    base_ns = Some(value);
                }
            }
        }
        Ok(Doc {
            path,
            members,
            events,
            base_ns,
        })
    }

    /// The raw value of top-level member `key` (the last one when repeated).
    pub fn member(&self, key: &str) -> Option<&'a RawValue> {
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
        let info: Info = serde_json::from_str(self.member("distributedInfo")?.get()).ok()?;
        parse_int(info.rank?.get())
    }
}

/// A JSON error as one line: the parser's reason and where, as a byte offset.
fn json_error(bytes: &[u8], path: &Path, e: &serde_json::Error) -> Error {
    let reason = e.to_string();
    let reason = match reason.rfind(" at line ") {
        Some(at) => reason[..at].to_string(),
        None => reason,
    };
    let offset = byte_offset(bytes, e.line(), e.column());
    let reason = if e.is_eof() {
        format!(
            "truncated JSON: {reason} (input ends at byte {})",
            bytes.len()
        )
    } else {
        format!(
            "invalid JSON at byte {offset} (line {}, column {}): {reason}",
            e.line(),
            e.column()
        )
    };
    Error::BadCpuTrace {
        file: path.to_path_buf(),
        reason,
    }
}

/// The byte offset of serde_json's 1-based line and column (column counts bytes).
fn byte_offset(bytes: &[u8], line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line {
        match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    (start + column.saturating_sub(1)).min(bytes.len())
}

type Parsed<'a> = (Vec<Member<'a>>, Option<Vec<&'a RawValue>>);

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Parsed<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Kineto trace (a JSON object with traceEvents)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Vec::new();
        let mut events = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "traceEvents" {
                if events.is_some() {
                    return Err(de::Error::custom("traceEvents appears twice"));
                }
                events = Some(map.next_value::<Vec<&'de RawValue>>()?);
                members.push(Member::Events);
            } else {
                members.push(Member::Raw(key.into_owned(), map.next_value()?));
            }
        }
        Ok((members, events))
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
        let mut ev = Event::default();
        let mut seen = 0u16;
        for (key, value) in json::members(raw)? {
            let field = match key.as_ref() {
                "ph" => 0,
                "cat" => 1,
                "name" => 2,
                "pid" => 3,
                "tid" => 4,
                "ts" => 5,
                "dur" => 6,
                "id" => 7,
                "args" => 8,
                _ => continue,
            };
            if seen & (1 << field) != 0 {
                return None;
            }
            seen |= 1 << field;
            let raw = (value != "null").then_some(value);
            match field {
                0 => ev.ph = text(value)?,
                1 => ev.cat = text(value)?,
                2 => ev.name = text(value)?,
                3 => ev.pid = raw,
                4 => ev.tid = raw,
                5 => ev.ts = raw,
                6 => ev.dur = raw,
                7 => ev.id = raw,
                _ => ev.args = raw,
            }
        }
        Some(ev)
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
    pub fn parse(raw: Option<&'a str>) -> Self {
        Args(
            raw.and_then(json::members)
                .map_or_else(Vec::new, Iterator::collect),
        )
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
        assert_eq!(doc.events[0].get(), r#"{"ph": "X",  "ts": 1.5}"#);
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
    fn args_split_into_mapped_and_rest() {
        let raw = r#"{"device": 0, "grid": [1,2,3], "warps per SM": 1.5}"#;
        let args = Args::parse(Some(raw));
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
