//! What a split export needs to know of each packet a writer wrote, noted as it is written
//! (only when asked: [`super::PftraceWriter::indexed`]): its size, its timestamp, its kind
//! (a slice's BEGIN or END and its track, a render stage and its event id) and the render
//! stages it links to. The split then cuts the trace by copying byte ranges, without
//! reading its own output again. The scan reads the wire format directly (no decoding).

use std::io;

/// One packet as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketMark {
    /// its timestamp (0 when it has none)
    pub ts: u64,
    /// its `Trace.packet` record's bytes: key, length and body
    pub len: u32,
    pub kind: PacketKind,
}

/// How a split places a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// not an event (clock snapshot, track descriptor, interned data): in every part
    Header,
    /// a SLICE_BEGIN on this track
    Begin(u64),
    /// a SLICE_END on this track
    End(u64),
    /// a render stage with this event id
    Stage(u64),
    /// any other event (a counter sample, an instant)
    Event,
}

/// The marks of every packet written, in order, and the links between them: (packet, the
/// render-stage event id it links to: as the stage an API slice submitted, or one a stage
/// waits for).
#[derive(Debug, Default)]
pub struct PacketIndex {
    pub marks: Vec<PacketMark>,
    pub links: Vec<(u32, u64)>,
}

impl PacketIndex {
    /// Note the whole `Trace.packet` records `chunk` holds.
    pub(super) fn note_records(&mut self, mut chunk: &[u8]) -> io::Result<()> {
        let bad = || io::Error::other("indexing: a packet record does not parse");
        while !chunk.is_empty() {
            let mut fields = Fields(chunk);
            let Some((1, Value::Bytes(body))) = fields.field() else {
                return Err(bad());
            };
            chunk = fields.0;
            self.note(body).ok_or_else(bad)?;
        }
        Ok(())
    }

    /// Note one packet, whose body is `body`; None when it does not parse.
    fn note(&mut self, body: &[u8]) -> Option<()> {
        let packet = self.marks.len() as u32;
        let mut mark = PacketMark {
            ts: 0,
            len: record_len(body.len()),
            kind: PacketKind::Header,
        };
        for field in Fields(body) {
            match field? {
                (8, Value::Int(ts)) => mark.ts = ts,
                (11, Value::Bytes(event)) => {
                    let (mut kind, mut track) = (0, 0);
                    for f in Fields(event) {
                        match f? {
                            (9, Value::Int(k)) => kind = k,
                            (11, Value::Int(t)) => track = t,
                            (3000, Value::Bytes(correlation)) => {
                                for f in Fields(correlation) {
                                    if let (1, Value::Int(id)) = f? {
                                        self.links.push((packet, id));
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    mark.kind = match kind {
                        1 => PacketKind::Begin(track),
                        2 => PacketKind::End(track),
                        _ => PacketKind::Event,
                    };
                }
                (53, Value::Bytes(stage)) => {
                    let mut id = 0;
                    for f in Fields(stage) {
                        match f? {
                            (1, Value::Int(i)) => id = i,
                            (18, Value::Int(wait)) => self.links.push((packet, wait)),
                            _ => {}
                        }
                    }
                    mark.kind = PacketKind::Stage(id);
                }
                (52, _) => mark.kind = PacketKind::Event,
                _ => {}
            }
        }
        self.marks.push(mark);
        Some(())
    }
}

/// The bytes of a `Trace.packet` record whose body has `len` bytes.
pub fn record_len(len: usize) -> u32 {
    let mut varint = 1;
    while len >> (7 * varint) != 0 {
        varint += 1;
    }
    (1 + varint + len) as u32
}

/// The body of the `Trace.packet` record `record`.
pub fn record_body(record: &[u8]) -> Option<&[u8]> {
    let mut fields = Fields(record);
    match fields.field()? {
        (1, Value::Bytes(body)) if fields.0.is_empty() => Some(body),
        _ => None,
    }
}

/// The length of each whole `Trace.packet` record at the start of `bytes`, in order.
pub(super) fn record_lens(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let mut fields = Fields(rest);
        fields.field()?;
        let len = rest.len() - fields.0.len();
        rest = fields.0;
        Some(len)
    })
}

/// A field's value: a varint or fixed number, or a length-delimited payload.
enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8]),
}

/// The fields of a message, in order; None for a malformed one (then the scan stops).
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = Option<(u64, Value<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_none() {
            self.0 = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let (&b, rest) = self.0.split_first()?;
            self.0 = rest;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b < 0x80 {
                return Some(v);
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        (n <= self.0.len()).then(|| {
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            head
        })
    }

    fn field(&mut self) -> Option<(u64, Value<'a>)> {
        let key = self.varint()?;
        let value = match key & 7 {
            0 => Value::Int(self.varint()?),
            1 => Value::Int(u64::from_le_bytes(self.take(8)?.try_into().ok()?)),
            2 => {
                let n = usize::try_from(self.varint()?).ok()?;
                Value::Bytes(self.take(n)?)
            }
            5 => Value::Int(u64::from(u32::from_le_bytes(
                self.take(4)?.try_into().ok()?,
            ))),
            _ => return None,
        };
        Some((key >> 3, value))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sink::perfetto::proto::{
        GpuCorrelation, GpuRenderStageEvent, TracePacket, TrackEvent,
    };
    use prost::Message;

    /// `packet` as a `Trace.packet` record.
    fn record(packet: &TracePacket) -> Vec<u8> {
        let body = packet.encode_to_vec();
        let mut out = vec![0x0a];
        prost::encoding::encode_varint(body.len() as u64, &mut out);
        out.extend_from_slice(&body);
        out
    }

    /// A render stage, event id 3 at time 9, waiting for stages 1 and 2.
    pub(crate) fn stage_waiting() -> TracePacket {
        TracePacket {
            timestamp: Some(9),
            gpu_render_stage_event: Some(GpuRenderStageEvent {
                event_id: Some(3),
                event_wait_ids: vec![1, 2],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_index_reads_kind_track_time_and_links_of_each_packet() {
        let begin = TracePacket {
            timestamp: Some(1234),
            track_event: Some(TrackEvent {
                r#type: Some(1),
                track_uuid: Some(77),
                gpu_correlation: Some(GpuCorrelation {
                    render_stage_submission_event_ids: vec![5, 1 << 40],
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let stage = stage_waiting();
        let header = TracePacket {
            trusted_packet_sequence_id: Some(1),
            ..Default::default()
        };
        let records = [record(&begin), record(&stage), record(&header)];
        let mut index = PacketIndex::default();
        index.note_records(&records.concat()).unwrap();
        let m = &index.marks;
        assert_eq!((m[0].ts, m[0].kind), (1234, PacketKind::Begin(77)));
        assert_eq!(m[0].len as usize, records[0].len());
        assert_eq!((m[1].ts, m[1].kind), (9, PacketKind::Stage(3)));
        assert_eq!(m[2].kind, PacketKind::Header);
        assert_eq!(index.links, vec![(0, 5), (0, 1 << 40), (1, 1), (1, 2)]);
        let lens: Vec<usize> = record_lens(&records.concat()).collect();
        assert_eq!(lens, records.iter().map(Vec::len).collect::<Vec<_>>());
        assert_eq!(record_body(&records[1]), Some(&stage.encode_to_vec()[..]));

        assert!(
            index.note_records(&[0x0a, 0x05, 1]).is_err(),
            "a truncated record"
        );
        assert!(
            index.note_records(&[0x0a, 0x02, 0x42, 0x05]).is_err(),
            "a truncated field"
        );
        assert_eq!(record_len(127), 129);
        assert_eq!(record_len(128), 131);
    }
}
