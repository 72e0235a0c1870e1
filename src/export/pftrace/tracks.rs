//! Track registration as the reference does it: one uuid sequence over process keys (pid)
//! and thread keys (pid, tid), in registration order; names from the Kineto `M` events,
//! else a label, else the id; descriptor ids masked to non-negative int32, non-integer ids
//! numbered 1, 2, ... in first-seen order.

use std::collections::HashMap;

use serde_json::Value;

use crate::sink::perfetto::Track;

/// A pid or tid as the reference's Python sees it: an int, or anything else by its `str()`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    Int(i64),
    Text(String),
}

impl Id {
    /// A JSON value (missing: None).
    pub fn from_json(v: Option<&Value>) -> Id {
        match v {
            Some(Value::Number(n)) if n.is_i64() => Id::Int(n.as_i64().expect("checked")),
            other => Id::Text(py_str(other)),
        }
    }

    fn text(&self) -> String {
        match self {
            Id::Int(v) => v.to_string(),
            Id::Text(s) => s.clone(),
        }
    }
}

/// Python's `str()` of a decoded JSON value (None when missing).
pub fn py_str(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Bool(false)) => "False".into(),
        Some(other) => other.to_string(),
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    Process(Id),
    Thread(Id, Id),
}

/// The tracks registered so far and the names to give them.
#[derive(Default)]
pub struct Tracks {
    uuids: HashMap<Key, u64>,
    small_ids: HashMap<String, i32>,
    pub process_names: HashMap<Id, String>,
    pub thread_names: HashMap<(Id, Id), String>,
    pub tracks: Vec<Track>,
    /// the raw pid of the first process registered
    pub first_pid: Option<Id>,
}

impl Tracks {
    fn descriptor_id(&mut self, id: &Id) -> i64 {
        match id {
            Id::Int(v) => v & 0x7FFF_FFFF,
            Id::Text(s) => {
                let next = self.small_ids.len() as i32 + 1;
                *self.small_ids.entry(s.clone()).or_insert(next) as i64
            }
        }
    }

    /// The uuid of thread (pid, tid), registering its process and itself when new.
    pub fn thread(&mut self, pid: &Id, tid: &Id, proc_label: &str, thr_label: &str) -> u64 {
        let pkey = Key::Process(pid.clone());
        let parent = match self.uuids.get(&pkey) {
            Some(u) => *u,
            None => {
                let uuid = self.uuids.len() as u64 + 1;
                self.uuids.insert(pkey, uuid);
                let name = pick(self.process_names.get(pid), proc_label, pid);
                let p = self.descriptor_id(pid) as i32;
                self.tracks.push(Track {
                    uuid,
                    parent: 0,
                    is_process: true,
                    pid: p,
                    tid: 0,
                    name,
                });
                self.first_pid.get_or_insert_with(|| pid.clone());
                uuid
            }
        };
        let tkey = Key::Thread(pid.clone(), tid.clone());
        if let Some(u) = self.uuids.get(&tkey) {
            return *u;
        }
        let uuid = self.uuids.len() as u64 + 1;
        self.uuids.insert(tkey, uuid);
        let name = pick(
            self.thread_names.get(&(pid.clone(), tid.clone())),
            thr_label,
            tid,
        );
        let p = self.descriptor_id(pid) as i32;
        let t = self.descriptor_id(tid);
        self.tracks.push(Track {
            uuid,
            parent,
            is_process: false,
            pid: p,
            tid: t,
            name,
        });
        uuid
    }

    /// Register the unique (pid, tid) pairs of a column in ascending order of the packed key
    /// `pid << 32 | tid & 0xFFFFFFFF` (the tid sign-extended back from 32 bits), as the
    /// reference's vectorized registration does; returns each row's uuid.
    pub fn threads_packed(
        &mut self,
        pairs: &[(i64, i64)],
        proc_fmt: &str,
        thr_fmt: &str,
    ) -> Vec<u64> {
        let key = |(p, t): &(i64, i64)| p.wrapping_shl(32) | (t & 0xFFFF_FFFF);
        let mut keys: Vec<i64> = pairs.iter().map(key).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut by_key = HashMap::with_capacity(keys.len());
        for k in keys {
            let pid = k >> 32;
            let mut tid = k & 0xFFFF_FFFF;
            if tid >= 0x8000_0000 {
                tid -= 0x1_0000_0000;
            }
            let uuid = self.thread(
                &Id::Int(pid),
                &Id::Int(tid),
                &proc_fmt.replace("{}", &pid.to_string()),
                &thr_fmt.replace("{}", &tid.to_string()),
            );
            by_key.insert(k, uuid);
        }
        pairs.iter().map(|p| by_key[&key(p)]).collect()
    }
}

/// `str(name or label or id)`.
fn pick(name: Option<&String>, label: &str, id: &Id) -> String {
    match name {
        Some(n) if !n.is_empty() => n.clone(),
        _ if !label.is_empty() => label.to_string(),
        _ => id.text(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_come_before_their_threads_and_ids_are_masked() {
        let mut t = Tracks::default();
        let uuids = t.threads_packed(&[(-1, 5), (7, -1), (7, 2)], "process {}", "thread {}");
        assert_eq!(uuids, vec![2, 5, 4]);
        let rows: Vec<_> = t
            .tracks
            .iter()
            .map(|t| (t.uuid, t.parent, t.pid, t.tid, t.name.as_str()))
            .collect();
        assert_eq!(
            rows,
            vec![
                (1, 0, 0x7FFF_FFFF, 0, "process -1"),
                (2, 1, 0x7FFF_FFFF, 5, "thread 5"),
                (3, 0, 7, 0, "process 7"),
                (4, 3, 7, 2, "thread 2"),
                (5, 3, 7, 0x7FFF_FFFF, "thread -1"),
            ]
        );
    }
}
