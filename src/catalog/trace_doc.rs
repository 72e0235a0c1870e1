//! The Kineto CPU trace document, split once: its top-level members as raw JSON text (never
//! re-encoded), its events as raw JSON text (which [`super::cpu_trace`] reads into
//! `cpu_event`), and the trace base time.

use std::path::Path;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::Error;
use crate::Result;

/// Kineto rounds its base time down to this many seconds (the reference reuses it for a
/// trace without `baseTimeNanoseconds`).
const TRIMONTH_SECONDS: u64 = 7_889_238;

/// A parsed CPU trace, borrowing the decompressed bytes.
pub struct TraceDoc<'a> {
    /// (key, JSON text); None for `traceEvents`, whose events are read apart
    members: Vec<(String, Option<&'a RawValue>)>,
    /// The trace base the window's times are measured from, ns.
    pub base_ns: i64,
    /// The base `cpu_event.ts_ns` was computed with (0 without `baseTimeNanoseconds`).
    pub cpu_base_ns: i64,
    has_base: bool,
    path: &'a Path,
}

impl<'a> TraceDoc<'a> {
    /// The document in `bytes` and its events (`traceEvents`, which it must have), each as
    /// its JSON text.
    pub fn parse(bytes: &'a [u8], path: &'a Path) -> Result<(Self, Vec<&'a RawValue>)> {
        let bad = |reason: String| Error::BadCpuTrace {
            file: path.to_path_buf(),
            reason,
        };
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let (members, events) = (&mut de)
            .deserialize_map(MembersVisitor)
            .and_then(|read| de.end().map(|()| read))
            .map_err(|e| bad(e.to_string()))?;
        let events = events.ok_or_else(|| bad("no traceEvents list".to_string()))?;
        let base = members
            .iter()
            .find(|(k, _)| k == "baseTimeNanoseconds")
            .and_then(|(_, raw)| *raw)
            .map(|raw| {
                parse_base(raw.get()).ok_or_else(|| {
                    bad(format!(
                        "baseTimeNanoseconds {} is not an integer",
                        raw.get()
                    ))
                })
            })
            .transpose()?;
        let doc = TraceDoc {
            members,
            base_ns: base.unwrap_or_else(default_base_ns),
            cpu_base_ns: base.unwrap_or(0),
            has_base: base.is_some(),
            path,
        };
        Ok((doc, events))
    }

    /// The trace's own `baseTimeNanoseconds`, if it has one.
    pub fn base(&self) -> Option<i64> {
        self.has_base.then_some(self.base_ns)
    }

    /// An error naming the trace's file.
    pub fn bad(&self, reason: String) -> Error {
        Error::BadCpuTrace {
            file: self.path.to_path_buf(),
            reason,
        }
    }

    /// The top-level member `key`, as JSON text.
    pub fn member(&self, key: &str) -> Option<&'a str> {
        self.members
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .and_then(|(_, raw)| raw.map(RawValue::get))
    }

    /// The top-level members in order (key, JSON text), `traceEvents` (whose events
    /// [`TraceDoc::parse`] returns) with None: what the document's frame is made of.
    pub fn members(&self) -> impl Iterator<Item = (&str, Option<&'a str>)> + '_ {
        (self.members.iter()).map(|(key, raw)| (key.as_str(), raw.map(RawValue::get)))
    }
}

/// The top-level members in one pass: `traceEvents` is split into its events as it is read
/// (its member holds None); None for the events of a trace without it. A second
/// `traceEvents` is an error.
struct MembersVisitor;

type MembersAndEvents<'de> = (
    Vec<(String, Option<&'de RawValue>)>,
    Option<Vec<&'de RawValue>>,
);

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = MembersAndEvents<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(String, Option<&'de RawValue>)> = Vec::new();
        let mut events = None;
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == "traceEvents" {
                if events.is_some() {
                    return Err(serde::de::Error::duplicate_field("traceEvents"));
                }
                events = Some(map.next_value::<Vec<&'de RawValue>>()?);
                None
            } else {
                Some(map.next_value::<&'de RawValue>()?)
            };
            // A repeated key keeps its first place and its last value (a Python dict).
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => out.push((key, value)),
            }
        }
        Ok((out, events))
    }
}

/// `int(value)` of Python for a JSON number or numeric string.
fn parse_base(text: &str) -> Option<i64> {
    let t = text.trim_matches('"').trim();
    t.parse::<i64>()
        .ok()
        .or_else(|| t.parse::<f64>().ok().map(|v| v.trunc() as i64))
}

/// The reference's fallback base: now, rounded down to Kineto's ~3-month boundary.
fn default_base_ns() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    ((now / TRIMONTH_SECONDS) * TRIMONTH_SECONDS * 1_000_000_000) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_order_and_events_their_text() {
        let text = br#"{"a":1,"traceName":"x","traceEvents":[{"ph":"M"}],"z":[2]}"#;
        let (doc, events) = TraceDoc::parse(text, Path::new("t.json")).unwrap();
        let members: Vec<_> = doc.members().collect();
        assert_eq!(
            members,
            [
                ("a", Some("1")),
                ("traceName", Some("\"x\"")),
                ("traceEvents", None),
                ("z", Some("[2]"))
            ]
        );
        assert_eq!(events[0].get(), r#"{"ph":"M"}"#);
        assert_eq!(doc.cpu_base_ns, 0);
    }

    #[test]
    fn the_base_time_is_read() {
        let text = br#"{"baseTimeNanoseconds":17,"traceEvents":[]}"#;
        let (doc, _) = TraceDoc::parse(text, Path::new("t.json")).unwrap();
        assert_eq!((doc.base_ns, doc.cpu_base_ns), (17, 17));
    }
}
