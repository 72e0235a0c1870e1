//! A protobuf wire writer for the packets a trace has millions of (slices, render stages,
//! counter samples). It writes what `prost` writes for the [`super::proto`] structs of the
//! same content, byte for byte: fields in tag order, minimal varints, every set field
//! written, zeros included. It only skips building those structs (a `String` per annotation
//! name, a `Vec` per list) and computing their lengths twice. The tests in `packets.rs`
//! compare the two encodings.

use crate::sink::json_text::write_int;

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

/// Encoded protobuf, appended to a buffer.
#[derive(Default)]
pub struct Wire {
    pub(super) buf: Vec<u8>,
}

impl Wire {
    fn varint(&mut self, mut v: u64) {
        // Most varints (keys, small ids, lengths) are one byte: no copy of a scratch array.
        if v < 0x80 {
            self.buf.push(v as u8);
            return;
        }
        self.buf.reserve(10);
        while v >= 0x80 {
            self.buf.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    /// A uint32/uint64 field.
    pub fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        self.varint(v);
    }

    /// An int32/int64 field (negative: ten bytes, as protobuf sign-extends both).
    pub fn int(&mut self, field: u32, v: i64) {
        self.uint(field, v as u64);
    }

    pub fn bool(&mut self, field: u32, v: bool) {
        self.uint(field, u64::from(v));
    }

    pub fn double(&mut self, field: u32, v: f64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A string or bytes field.
    pub fn bytes(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        self.varint(v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A string field holding `v` in decimal (what `v.to_string()` gives).
    pub fn decimal(&mut self, field: u32, v: i64) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.push(0);
        write_int(&mut self.buf, v);
        // At most 20 characters: the length is one byte.
        self.buf[at] = (self.buf.len() - at - 1) as u8;
    }

    /// An embedded message field whose body `body` writes.
    pub fn message(&mut self, field: u32, body: impl FnOnce(&mut Wire)) {
        self.message_sized(field, 1, body);
    }

    /// [`Wire::message`] with room for a `room`-byte length kept before the body (1 or 2):
    /// 2 where bodies are usually 128 bytes or longer, so that the body is moved only when
    /// its length takes another number of bytes. The bytes are the same either way.
    pub fn message_sized(&mut self, field: u32, room: usize, body: impl FnOnce(&mut Wire)) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.resize(at + room, 0);
        body(self);
        let len = self.buf.len() - at - room;
        let (head, need) = varint_bytes(len as u64);
        if need != room {
            if need > room {
                self.buf.resize(self.buf.len() + need - room, 0);
            }
            self.buf.copy_within(at + room..at + room + len, at + need);
            self.buf.truncate(at + need + len);
        }
        self.buf[at..at + need].copy_from_slice(&head[..need]);
    }

    /// Append fields already encoded (a packet's body copied from another trace).
    pub fn encoded(&mut self, fields: &[u8]) {
        self.buf.extend_from_slice(fields);
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
}

/// The varint of `v`: its bytes, and how many of them there are.
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        bytes[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    (bytes, n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[derive(Clone, PartialEq, prost::Message)]
    struct Inner {
        #[prost(string, optional, tag = "1")]
        text: Option<String>,
        #[prost(int32, optional, tag = "2")]
        small: Option<i32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    struct Outer {
        #[prost(uint64, optional, tag = "1")]
        big: Option<u64>,
        #[prost(int64, optional, tag = "2")]
        negative: Option<i64>,
        #[prost(double, optional, tag = "3")]
        real: Option<f64>,
        #[prost(bool, optional, tag = "4")]
        flag: Option<bool>,
        #[prost(message, optional, tag = "3000")]
        inner: Option<Inner>,
    }

    /// Every length from 0 to past two varint bytes, every sign and width, against prost.
    #[test]
    fn fields_and_lengths_encode_as_prost_does() {
        for len in [0usize, 1, 125, 126, 127, 128, 200, 16_380, 16_384, 70_000] {
            for v in [0i64, 1, -1, 127, 128, i64::MAX, i64::MIN] {
                let expected = Outer {
                    big: Some(v as u64),
                    negative: Some(v),
                    real: Some(v as f64 / 3.0),
                    flag: Some(v < 0),
                    inner: Some(Inner {
                        text: Some("x".repeat(len)),
                        small: Some(v as i32),
                    }),
                }
                .encode_to_vec();
                let mut w = Wire::default();
                w.uint(1, v as u64);
                w.int(2, v);
                w.double(3, v as f64 / 3.0);
                w.bool(4, v < 0);
                w.message(3000, |m| {
                    m.bytes(1, "x".repeat(len).as_bytes());
                    m.int(2, i64::from(v as i32));
                });
                assert_eq!(w.buf, expected, "len {len}, value {v}");
                // Room for a two-byte length: the same bytes, whatever the length takes.
                let mut sized = Wire::default();
                sized.uint(1, v as u64);
                sized.int(2, v);
                sized.double(3, v as f64 / 3.0);
                sized.bool(4, v < 0);
                sized.message_sized(3000, 2, |m| {
                    m.bytes(1, "x".repeat(len).as_bytes());
                    m.int(2, i64::from(v as i32));
                });
                assert_eq!(sized.buf, expected, "len {len}, value {v}, room 2");
            }
        }
    }

    #[test]
    fn decimals_are_the_numbers_text() {
        for v in [0i64, 7, -7, 1234567890123, i64::MIN, i64::MAX] {
            let mut w = Wire::default();
            w.decimal(2, v);
            let expected = Inner {
                text: None,
                small: None,
            };
            let mut bytes = expected.encode_to_vec();
            prost::encoding::string::encode(2, &v.to_string(), &mut bytes);
            assert_eq!(w.buf, bytes, "{v}");
        }
    }
}
