//! The Chrome document's frame: everything but the events. The CPU trace's top-level
//! members keep their places around `traceEvents` (as the reference's dict does), with
//! `traceName` set in place, or appended when the trace has none.

use super::write_str;

/// The bytes of a document around its events: `head` (up to `"traceEvents":[`), the
/// separator between two events or stretches of events, `tail` (from `]` to the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Frame {
    /// Between two events, and between two stretches of events encoded apart.
    pub const SEPARATOR: &'static [u8] = b",";

    /// The frame of a document whose top-level members are `members` in order (key, JSON
    /// text copied verbatim; None marks the place of `traceEvents`), with `traceName` set to
    /// `trace_name`: in place, or appended when the members have none (as Python's dict
    /// assignment does). Without a `traceEvents` place, it goes after every other member.
    pub fn new<'s>(
        members: impl IntoIterator<Item = (&'s str, Option<&'s str>)>,
        trace_name: &str,
    ) -> Frame {
        let mut name = Vec::with_capacity(trace_name.len() + 2);
        write_str(&mut name, trace_name);
        let mut head: Vec<(&str, &[u8])> = Vec::new();
        let mut tail: Vec<(&str, &[u8])> = Vec::new();
        let (mut seen_events, mut named) = (false, false);
        for (key, value) in members {
            let Some(value) = value else {
                seen_events = true;
                continue;
            };
            let value = if key == "traceName" {
                named = true;
                &name[..]
            } else {
                value.as_bytes()
            };
            if seen_events {
                tail.push((key, value));
            } else {
                head.push((key, value));
            }
        }
        if !seen_events {
            // Python appends traceEvents after every existing key.
            tail.append(&mut head);
        }
        if !named {
            tail.push(("traceName", &name));
        }
        let mut frame = Frame {
            head: vec![b'{'],
            tail: vec![b']'],
        };
        for (key, value) in head {
            write_str(&mut frame.head, key);
            frame.head.push(b':');
            frame.head.extend_from_slice(value);
            frame.head.push(b',');
        }
        frame.head.extend_from_slice(b"\"traceEvents\":[");
        for (key, value) in tail {
            frame.tail.push(b',');
            write_str(&mut frame.tail, key);
            frame.tail.push(b':');
            frame.tail.extend_from_slice(value);
        }
        frame.tail.push(b'}');
        frame
    }

    /// `{`, the members before `traceEvents`, `"traceEvents":[`.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// `]`, the members after `traceEvents`, `}`.
    pub fn tail(&self) -> &[u8] {
        &self.tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(frame: &Frame) -> (String, String) {
        let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        (s(frame.head()), s(frame.tail()))
    }

    #[test]
    fn members_keep_their_places_and_trace_name_is_set() {
        let members = [
            ("a", Some("1")),
            ("traceName", Some("\"x\"")),
            ("traceEvents", None),
            ("z", Some("[2]")),
        ];
        let frame = Frame::new(members, "n\"q");
        assert_eq!(
            text(&frame),
            (
                r#"{"a":1,"traceName":"n\"q","traceEvents":["#.into(),
                r#"],"z":[2]}"#.into()
            )
        );
    }

    #[test]
    fn a_trace_name_is_appended_when_absent() {
        let frame = Frame::new([("b", Some("17")), ("traceEvents", None)], "n");
        assert_eq!(
            text(&frame),
            (
                r#"{"b":17,"traceEvents":["#.into(),
                r#"],"traceName":"n"}"#.into()
            )
        );
    }

    #[test]
    fn without_trace_events_every_member_comes_first() {
        let frame = Frame::new([("b", Some("17"))], "n");
        assert_eq!(
            text(&frame),
            (
                r#"{"traceEvents":["#.into(),
                r#"],"b":17,"traceName":"n"}"#.into()
            )
        );
    }
}
