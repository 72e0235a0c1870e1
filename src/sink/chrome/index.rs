//! What a split export needs to know of each event a writer wrote, noted as it is written
//! (only when asked: [`super::ChromeWriter::with_index`]): where its bytes are, when it
//! starts, and whether it is metadata or a flow event. The split then cuts the document
//! by copying byte ranges, without parsing its own output.

use std::hash::{BuildHasher, Hash, Hasher};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::members::{members, plain_str};
use crate::error::Error;
use crate::Result;

/// The bytes of whole events an indexed writer hands its output at a time: a gzipped
/// segment is compressed in blocks of this size that each inflate alone, and a split
/// compresses again only the blocks its cuts fall in.
pub const BLOCK: usize = 128 << 10;

/// One event as written: its bytes `start..start + len` in the writer's output (before any
/// compression, without the separator before it), its `ts` (0 when absent) and its place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mark {
    pub start: u64,
    pub len: u32,
    pub ts: f64,
    pub place: Place,
}

/// How a split places an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// metadata (`ph` `M`): in every part
    Header,
    /// a flow event (`s`, `t`, `f`) of the flow with this key ([`flow_key`])
    Flow(u64),
    /// any other event: in the part its `ts` falls in
    Timed,
}

impl Place {
    /// The place of an event with this `ph`; `flow` gives a flow event's key.
    pub fn of(ph: Option<&str>, flow: impl FnOnce() -> u64) -> Place {
        match ph {
            Some("M") => Place::Header,
            Some("s" | "t" | "f") => Place::Flow(flow()),
            _ => Place::Timed,
        }
    }
}

/// The key of a flow: its events share category, name and id (the id as its JSON text).
/// A fixed fast hash: every flow event of an export is keyed (SipHash took 80 ms of CPU on
/// 1 M events' flows).
pub fn flow_key(cat: Option<&str>, name: Option<&str>, id: Option<&str>) -> u64 {
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    cat.hash(&mut h);
    name.hash(&mut h);
    id.hash(&mut h);
    h.finish()
}

/// What the index reads of an event given as JSON text.
#[derive(Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    ph: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    ts: Option<f64>,
    #[serde(borrow, default)]
    cat: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

/// The `ts` and place of an event given as JSON text (a CPU-trace event copied as written).
pub fn probe(event: &str) -> Result<(f64, Place)> {
    match probe_members(event) {
        Some(found) => Ok(found),
        None => probe_by_serde(event),
    }
}

/// The probe from the members' text ([`members`]), without parsing the rest of the event;
/// None where serde must read it: a member the probe reads is escaped, repeated or of
/// another type, or a key is escaped (it could spell one of them).
fn probe_members(event: &str) -> Option<(f64, Place)> {
    let (mut ph, mut ts, mut cat, mut name, mut id) = (None, None, None, None, None);
    for member in members(event)? {
        let slot = match member.key {
            "ph" => &mut ph,
            "ts" => &mut ts,
            "cat" => &mut cat,
            "name" => &mut name,
            "id" => &mut id,
            key if key.contains('\\') => return None,
            _ => continue,
        };
        let text = &event[member.value];
        // null reads as absent, as serde reads an `Option`
        if slot.replace((text != "null").then_some(text)).is_some() {
            return None;
        }
    }
    fn text(value: Option<Option<&str>>) -> Option<Option<&str>> {
        match value.flatten() {
            None => Some(None),
            Some(v) => plain_str(v).map(Some),
        }
    }
    let ts = match ts.flatten() {
        None => 0.0,
        Some(t) => serde_json::from_str::<f64>(t).ok()?,
    };
    let (ph, cat, name) = (text(ph)?, text(cat)?, text(name)?);
    Some((ts, Place::of(ph, || flow_key(cat, name, id.flatten()))))
}

fn probe_by_serde(event: &str) -> Result<(f64, Place)> {
    let p: Probe = serde_json::from_str(event).map_err(|e| {
        Error::Internal(format!("splitting: a CPU-trace event does not parse: {e}"))
    })?;
    let place = Place::of(p.ph.as_deref(), || {
        flow_key(p.cat.as_deref(), p.name.as_deref(), p.id.map(RawValue::get))
    });
    Ok((p.ts.unwrap_or(0.0), place))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_events_are_placed_by_ph_and_flows_keyed_by_cat_name_and_id() {
        let (ts, place) = probe(r#"{"ph":"M","name":"process_name","ts":0}"#).unwrap();
        assert_eq!((ts, place), (0.0, Place::Header));
        let (ts, place) = probe(r#"{"ph":"X","ts":12.5,"dur":1}"#).unwrap();
        assert_eq!((ts, place), (12.5, Place::Timed));
        let s = probe(r#"{"ph":"s","cat":"ac2g","name":"n","id":7,"ts":3}"#).unwrap();
        let f = probe(r#"{"ts":9,"id":7,"ph":"f","name":"n","cat":"ac2g","bp":"e"}"#).unwrap();
        let other = probe(r#"{"ph":"f","cat":"ac2g","name":"n","id":8,"ts":9}"#).unwrap();
        let key = flow_key(Some("ac2g"), Some("n"), Some("7"));
        assert_eq!(s, (3.0, Place::Flow(key)));
        assert_eq!(f, (9.0, Place::Flow(key)));
        assert_ne!(other.1, Place::Flow(key));
        assert!(probe("[1]").is_err());
    }

    #[test]
    fn the_members_scan_places_events_as_serde_does() {
        let events = [
            r#"{"ph":"X","ts":12.5,"dur":1,"args":{"ts":1,"ph":"M"}}"#,
            r#"{"ph":"s","cat":"ac2g","name":"n","id":7,"ts":3}"#,
            r#"{"ph":"f","cat":"a\"c","name":"n","id":"0x7","ts":3e2}"#,
            r#"{"ph":"t","cat":null,"name":"n","id":null,"ts":null}"#,
            r#"{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"x"}}"#,
            r#"{"p\u0068":"M","ts":5}"#,
            r#"{"name":"no phase","ts":-1}"#,
            r#"{"ph":"s","id":{"a":[1,2]},"ts":1}"#,
        ];
        for event in events {
            let fast = probe_members(event);
            let serde = probe_by_serde(event).unwrap();
            assert!(
                fast.is_none_or(|f| f == serde),
                "{event}: {fast:?} != {serde:?}"
            );
            assert_eq!(probe(event).unwrap(), serde, "{event}");
        }
        assert!(probe_members(r#"{"ph":"s","id":7,"ts":3}"#).is_some());
        // a repeated member and a ts of another type are left to serde, which refuses them
        for event in [r#"{"ts":1,"ts":2}"#, r#"{"ts":"1"}"#] {
            assert_eq!(probe_members(event), None, "{event}");
            assert!(probe(event).is_err(), "{event}");
        }
    }
}
