//! Streaming writer of the Kineto-shaped `cpu_trace.json.gz` (hand-rolled JSON, gzip level 1).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use super::catalog::DEVICE_NAME;
use crate::sink::json_text::write_int;
use crate::{Error, Result};

/// A process of the trace: pid and its threads (OS tid, name).
pub struct CpuProc {
    pub pid: i64,
    pub threads: Vec<(i64, &'static str)>,
}

/// Writes events as they come; the text is buffered and pushed through gzip in 1 MiB pieces.
pub struct CpuTrace {
    path: PathBuf,
    out: GzEncoder<BufWriter<File>>,
    buf: Vec<u8>,
    base_ns: i64,
    ev_idx: i64,
    err: Option<std::io::Error>,
}

fn push_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    for &c in s.as_bytes() {
        match c {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            c if c < 0x20 => {
                buf.extend_from_slice(b"\\u00");
                buf.push(b"0123456789abcdef"[(c >> 4) as usize]);
                buf.push(b"0123456789abcdef"[(c & 15) as usize]);
            }
            c => buf.push(c),
        }
    }
    buf.push(b'"');
}

/// A duration or offset in ns written as microseconds with up to 3 decimals (`12.5`, `7.0`).
fn push_us(buf: &mut Vec<u8>, ns: i64) {
    let ns = ns.max(0);
    write_int(buf, ns / 1000);
    buf.push(b'.');
    let mut frac = ns % 1000;
    if frac == 0 {
        buf.push(b'0');
        return;
    }
    let mut digits = 3;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    let s = frac.to_string();
    for _ in s.len()..digits {
        buf.push(b'0');
    }
    buf.extend_from_slice(s.as_bytes());
}

impl CpuTrace {
    /// Open the file and write everything before the first X event: the top-level keys and the
    /// leading process/thread metadata events.
    pub fn begin(
        path: &Path,
        base_ns: i64,
        first_ns: i64,
        devices: u32,
        procs: &[CpuProc],
        trace_id: &str,
    ) -> Result<Self> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let out = GzEncoder::new(BufWriter::new(file), Compression::new(1));
        let mut t = CpuTrace {
            path: path.to_path_buf(),
            out,
            buf: Vec::with_capacity(1 << 21),
            base_ns,
            ev_idx: 0,
            err: None,
        };
        let b = &mut t.buf;
        b.extend_from_slice(b"{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
        for d in 0..devices {
            if d > 0 {
                b.push(b',');
            }
            b.extend_from_slice(b"\n    {\"id\": ");
            write_int(b, d as i64);
            b.extend_from_slice(b", \"name\": ");
            push_str(b, DEVICE_NAME);
            b.extend_from_slice(
                b", \"totalGlobalMem\": 85029158912, \"computeMajor\": 9, \"computeMinor\": 0, \
                  \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048, \
                  \"regsPerBlock\": 65536, \"warpSize\": 32, \"sharedMemPerBlock\": 49152, \
                  \"numSms\": 132}",
            );
        }
        b.extend_from_slice(b"\n  ],\n  \"trace_id\": ");
        push_str(b, trace_id);
        b.extend_from_slice(b",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
        write_int(b, base_ns);
        b.extend_from_slice(b",\n  \"traceEvents\": [");
        let mut first = true;
        for p in procs {
            let label_meta: [(&str, &str, String); 3] = [
                ("process_name", "name", "\"python\"".into()),
                ("process_labels", "labels", "\"CPU\"".into()),
                ("process_sort_index", "sort_index", p.pid.to_string()),
            ];
            for (name, key, val) in label_meta.iter() {
                t.meta(&mut first, name, p.pid, 0, first_ns, key, val);
            }
            for &(tid, tname) in &p.threads {
                let label = format!("\"thread {tid} ({tname})\"");
                t.meta(
                    &mut first,
                    "thread_name",
                    p.pid,
                    tid,
                    first_ns,
                    "name",
                    &label,
                );
                t.meta(
                    &mut first,
                    "thread_sort_index",
                    p.pid,
                    tid,
                    first_ns,
                    "sort_index",
                    &tid.to_string(),
                );
            }
        }
        Ok(t)
    }

    #[allow(clippy::too_many_arguments)]
    fn meta(
        &mut self,
        first: &mut bool,
        name: &str,
        pid: i64,
        tid: i64,
        ts: i64,
        key: &str,
        val: &str,
    ) {
        let b = &mut self.buf;
        b.extend_from_slice(if *first { b"\n    " } else { b",\n    " });
        *first = false;
        b.extend_from_slice(b"{\"name\": ");
        push_str(b, name);
        b.extend_from_slice(b", \"ph\": \"M\", \"ts\": ");
        push_us(b, ts - self.base_ns);
        b.extend_from_slice(b", \"pid\": ");
        write_int(b, pid);
        b.extend_from_slice(b", \"tid\": ");
        write_int(b, tid);
        b.extend_from_slice(b", \"args\": {\"");
        b.extend_from_slice(key.as_bytes());
        b.extend_from_slice(b"\": ");
        b.extend_from_slice(val.as_bytes());
        b.extend_from_slice(b"}}");
    }

    fn x_head(&mut self, cat: &str, name: &str, pid: i64, tid: i64, start_ns: i64, end_ns: i64) {
        let base = self.base_ns;
        let b = &mut self.buf;
        b.extend_from_slice(b",\n    {\"ph\": \"X\", \"cat\": \"");
        b.extend_from_slice(cat.as_bytes());
        b.extend_from_slice(b"\", \"name\": ");
        push_str(b, name);
        b.extend_from_slice(b", \"pid\": ");
        write_int(b, pid);
        b.extend_from_slice(b", \"tid\": ");
        write_int(b, tid);
        b.extend_from_slice(b", \"ts\": ");
        push_us(b, start_ns - base);
        b.extend_from_slice(b", \"dur\": ");
        push_us(b, end_ns - start_ns);
        b.extend_from_slice(b", \"args\": {");
    }

    fn x_tail(&mut self) {
        self.buf.extend_from_slice(b"\"Ev Idx\": ");
        write_int(&mut self.buf, self.ev_idx);
        self.buf.extend_from_slice(b"}}");
        self.ev_idx += 1;
        if self.buf.len() >= 1 << 20 {
            self.drain();
        }
    }

    fn drain(&mut self) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(&self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
    }

    /// A `cpu_op` X event.
    #[allow(clippy::too_many_arguments)]
    pub fn cpu_op(&mut self, name: &str, pid: i64, tid: i64, s: i64, e: i64, ext: i64, seq: i64) {
        self.x_head("cpu_op", name, pid, tid, s, e);
        let b = &mut self.buf;
        b.extend_from_slice(b"\"External id\": ");
        write_int(b, ext);
        b.extend_from_slice(b", \"Record function id\": 0, \"Sequence number\": ");
        write_int(b, seq);
        b.extend_from_slice(b", \"Fwd thread id\": 0, ");
        self.x_tail();
    }

    /// A `user_annotation` X event (a record_function region).
    pub fn user_annotation(&mut self, name: &str, pid: i64, tid: i64, s: i64, e: i64, ext: i64) {
        self.x_head("user_annotation", name, pid, tid, s, e);
        self.buf.extend_from_slice(b"\"External id\": ");
        write_int(&mut self.buf, ext);
        self.buf.extend_from_slice(b", \"Record function id\": 0, ");
        self.x_tail();
    }

    /// A `python_function` X event.
    pub fn python_function(&mut self, name: &str, pid: i64, tid: i64, s: i64, e: i64, py_id: i64) {
        self.x_head("python_function", name, pid, tid, s, e);
        self.buf.extend_from_slice(b"\"Python id\": ");
        write_int(&mut self.buf, py_id);
        self.buf.extend_from_slice(b", ");
        self.x_tail();
    }

    /// The Kineto profiler span and instants, the closing keys; flush and close the file.
    pub fn finish(mut self, first_ns: i64, last_ns: i64, trace_name: &str) -> Result<()> {
        let base = self.base_ns;
        let b = &mut self.buf;
        b.extend_from_slice(
            b",\n    {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \
              \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"ts\": ",
        );
        push_us(b, first_ns - base);
        b.extend_from_slice(b", \"dur\": ");
        push_us(b, last_ns - first_ns);
        b.extend_from_slice(b", \"args\": {\"Op count\": 0}}");
        b.extend_from_slice(
            b",\n    {\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", \
              \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": ",
        );
        push_us(b, first_ns - base);
        b.extend_from_slice(
            b"},\n    {\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \
              \"tid\": \"\", \"ts\": ",
        );
        push_us(b, last_ns + 1 - base);
        b.extend_from_slice(b"}\n  ],\n  \"traceName\": ");
        push_str(b, trace_name);
        b.extend_from_slice(b"\n}\n");
        self.drain();
        if let Some(e) = self.err.take() {
            return Err(Error::io(&self.path, e));
        }
        let w = self.out.finish().map_err(|e| Error::io(&self.path, e))?;
        w.into_inner()
            .map_err(|e| Error::io(&self.path, e.into_error()))?
            .sync_all()
            .ok();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_keep_three_decimals_at_most() {
        let f = |ns| {
            let mut b = Vec::new();
            push_us(&mut b, ns);
            String::from_utf8(b).unwrap()
        };
        assert_eq!(f(4_999_991_125), "4999991.125");
        assert_eq!(f(7_000), "7.0");
        assert_eq!(f(5_000_015_001), "5000015.001");
        assert_eq!(f(12_500), "12.5");
        assert_eq!(f(30), "0.03");
    }
}
