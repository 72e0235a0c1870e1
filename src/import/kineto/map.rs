//! One Kineto event to one window row: which category goes to which table, and how each
//! column is read from the event's fields and `args` (docs/import-kineto.md lists the rules).

use crate::catalog::cpu_trace::parse_int;
use crate::window::writer::{Table, V};

use super::doc::{Args, Event};
use super::tables::opt;

/// CUPTI's 32-bit "invalid / none", kept as a positive Int64 (window format sentinels).
const INVALID: i64 = 0xFFFF_FFFF;

/// Where an event goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Kernel,
    Memcpy,
    Memset,
    Runtime,
    Driver,
    Sync,
    Overhead,
    GpuAnnotation,
    /// A CPU-to-GPU launch flow (`s` start on the API call, `f` end on the GPU op); the
    /// exporter redraws these from correlation ids.
    LaunchFlow {
        start: bool,
    },
    /// Everything else: stays in the CPU trace as written.
    Cpu,
}

/// The class of an event from its phase and category (current and legacy spellings).
pub fn classify(ev: &Event) -> Class {
    let ph = ev.ph.as_deref().unwrap_or("");
    let cat = ev.cat.as_deref().unwrap_or("");
    match ph {
        "X" => match cat {
            "kernel" | "Kernel" => Class::Kernel,
            "gpu_memcpy" | "Memcpy" => Class::Memcpy,
            "gpu_memset" | "Memset" => Class::Memset,
            "cuda_runtime" | "Runtime" => Class::Runtime,
            "cuda_driver" | "Driver" => Class::Driver,
            "cuda_sync" => Class::Sync,
            "overhead" => Class::Overhead,
            "gpu_user_annotation" => Class::GpuAnnotation,
            _ => Class::Cpu,
        },
        "s" | "f" if matches!(cat, "ac2g" | "async_cpu_to_gpu" | "async") => {
            Class::LaunchFlow { start: ph == "s" }
        }
        _ => Class::Cpu,
    }
}

/// Start and end of an event, unix ns.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub start: i64,
    pub end: i64,
}

/// What the annotation and flow passes need to know of a GPU op.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub device: Option<i64>,
    pub stream: Option<i64>,
    pub span: Span,
    pub correlation: i64,
}

/// An integer id field (`pid`, `tid`): a number or a string of digits.
fn id_int(raw: Option<&str>) -> Option<i64> {
    raw.and_then(parse_int)
}

/// `[x, y, z]`; zeros when absent or malformed (the exporter writes the triple unconditionally).
fn dim3(args: &Args, key: &str) -> [i64; 3] {
    args.get(key).and_then(int_triple).unwrap_or([0; 3])
}

/// A JSON list of exactly three integers (valid JSON text).
fn int_triple(raw: &str) -> Option<[i64; 3]> {
    let inner = raw.strip_prefix('[')?.strip_suffix(']')?;
    let mut parts = inner.split(',').map(|p| p.trim().parse::<i64>().ok());
    let triple = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(triple)
}

/// The args every GPU op shares, read once.
struct Common {
    device: Option<i64>,
    context: Option<i64>,
    stream: Option<i64>,
    correlation: i64,
    graph_node_id: i64,
    graph_id: i64,
}

const COMMON_KEYS: &[&str] = &[
    "device",
    "context",
    "stream",
    "correlation",
    "graph id",
    "graph node id",
    "External id",
    "external id",
];

fn common(ev: &Event, args: &Args) -> Common {
    Common {
        device: args.int("device").or_else(|| id_int(ev.pid)),
        context: args.int("context"),
        stream: args.int("stream").or_else(|| id_int(ev.tid)),
        correlation: args.int("correlation").unwrap_or(0),
        graph_node_id: args.int("graph node id").unwrap_or(0),
        graph_id: args.int("graph id").unwrap_or(0),
    }
}

impl Common {
    fn cells(&self, span: Span) -> [V<'static>; 8] {
        [
            V::I(span.start),
            V::I(span.end),
            opt(self.device),
            opt(self.context),
            opt(self.stream),
            V::I(self.correlation),
            V::I(self.graph_node_id),
            V::I(self.graph_id),
        ]
    }

    fn op(&self, span: Span) -> Op {
        Op {
            device: self.device,
            stream: self.stream,
            span,
            correlation: self.correlation,
        }
    }
}

const KERNEL_KEYS: &[&str] = &[
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "queued",
];

pub fn kernel(t: &mut Table, ev: &Event, args: &Args, span: Span) -> Op {
    let c = common(ev, args);
    let [gx, gy, gz] = dim3(args, "grid");
    let [bx, by, bz] = dim3(args, "block");
    let rest = args.rest_as_object(&[COMMON_KEYS, KERNEL_KEYS]);
    let [s, e, d, ctx, st, corr, gn, g] = c.cells(span);
    t.push(&[
        s,
        e,
        d,
        ctx,
        st,
        corr,
        gn,
        g,
        V::S(ev.name.as_deref().unwrap_or("")),
        V::N, // annotation
        V::I(gx),
        V::I(gy),
        V::I(gz),
        V::I(bx),
        V::I(by),
        V::I(bz),
        opt(args.int("registers per thread")),
        // Kineto reports static + dynamic as one number
        opt(args.int("shared memory")),
        opt(args.int("shared memory").map(|_| 0)),
        V::N, // priority
        opt(args.int("queued")),
        V::N, // channel
        V::N, // channel_type
        rest.as_deref().map_or(V::N, V::S),
        V::N, // logical_lane
        V::N, // lane_name
    ]);
    c.op(span)
}

/// CUPTI's copy kinds by Kineto's name, `HtoD` = 1 ... `PtoP` = 10.
const COPY_KINDS: &[&str] = &[
    "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP",
];
/// CUPTI's memory kinds by Kineto's name, `Pageable` = 1 ... `Managed Static` = 7.
const MEMORY_KINDS: &[&str] = &[
    "Unknown",
    "Pageable",
    "Pinned",
    "Device",
    "Array",
    "Managed",
    "Device Static",
    "Managed Static",
];

fn code(table: &[&str], name: &str) -> Option<i64> {
    table
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name.trim()))
        .map(|i| i as i64)
}

/// `Memcpy DtoH (Device -> Pageable)` to (copy kind, src kind, dst kind); 0 = unknown.
pub fn memcpy_kinds(name: &str) -> (i64, i64, i64) {
    let rest = name.strip_prefix("Memcpy").unwrap_or(name).trim();
    let (copy, memory) = match rest.split_once('(') {
        Some((copy, memory)) => (copy.trim(), memory.trim_end_matches(')')),
        None => (rest, ""),
    };
    let (src, dst) = memory.split_once("->").unwrap_or(("", ""));
    (
        code(COPY_KINDS, copy).unwrap_or(0),
        code(MEMORY_KINDS, src).unwrap_or(0),
        code(MEMORY_KINDS, dst).unwrap_or(0),
    )
}

/// `Memset (Device)` to the memory kind; 0 = unknown.
pub fn memset_kind(name: &str) -> i64 {
    name.split_once('(')
        .and_then(|(_, kind)| code(MEMORY_KINDS, kind.trim_end_matches(')')))
        .unwrap_or(0)
}

pub fn memcpy(t: &mut Table, ev: &Event, args: &Args, span: Span) -> Op {
    let c = common(ev, args);
    let name = ev.name.as_deref().unwrap_or("");
    let (mut copy, src, dst) = memcpy_kinds(name);
    if copy == 0 {
        // ROCm writes the direction as args.kind ("HtoD")
        copy = args
            .text("kind")
            .and_then(|k| code(COPY_KINDS, &k))
            .unwrap_or(0);
    }
    let rest = args.rest_as_object(&[COMMON_KEYS, &["bytes"]]);
    let [s, e, d, ctx, st, corr, gn, g] = c.cells(span);
    t.push(&[
        s,
        e,
        d,
        ctx,
        st,
        corr,
        gn,
        g,
        V::N, // annotation
        opt(args.int("bytes")),
        V::I(copy),
        V::I(src),
        V::I(dst),
        V::N, // flags
        V::N, // channel
        V::N, // channel_type
        rest.as_deref().map_or(V::N, V::S),
        V::N,
        V::N,
        V::N,
        V::N,
        V::S(name),
    ]);
    c.op(span)
}

pub fn memset(t: &mut Table, ev: &Event, args: &Args, span: Span) -> Op {
    let c = common(ev, args);
    let name = ev.name.as_deref().unwrap_or("");
    let rest = args.rest_as_object(&[COMMON_KEYS, &["bytes"]]);
    let [s, e, d, ctx, st, corr, gn, g] = c.cells(span);
    t.push(&[
        s,
        e,
        d,
        ctx,
        st,
        corr,
        gn,
        g,
        V::N, // annotation
        opt(args.int("bytes")),
        V::N, // value
        V::I(memset_kind(name)),
        V::N, // flags
        V::N, // channel
        V::N, // channel_type
        rest.as_deref().map_or(V::N, V::S),
        V::N,
        V::N,
        V::S(name),
    ]);
    c.op(span)
}

/// A runtime or driver call; None (nothing written) without a `cbid` (ROCm's hip* calls).
pub fn api(t: &mut Table, ev: &Event, args: &Args, span: Span) -> Option<i64> {
    let cbid = args.int("cbid")?;
    let correlation = args.int("correlation").unwrap_or(0);
    t.push(&[
        V::I(cbid),
        V::I(span.start),
        V::I(span.end),
        opt(id_int(ev.pid)),
        opt(id_int(ev.tid)),
        V::I(correlation),
        V::S(ev.name.as_deref().unwrap_or("")),
    ]);
    Some(correlation)
}

/// Kineto's sync kind names, `Event Sync` = 1 ... `Context Sync` = 4.
const SYNC_KINDS: &[&str] = &[
    "Unknown",
    "Event Sync",
    "Stream Wait Event",
    "Stream Sync",
    "Context Sync",
];

/// A cuda_sync row. When the awaited event's record call is known, a cuda_event row ties it
/// to the sync through a fresh `cuda_event_sync_id` (`next_sync_id`, counted up).
pub fn sync(
    t: &mut Table,
    events: &mut Table,
    next_sync_id: &mut i64,
    ev: &Event,
    args: &Args,
    span: Span,
) {
    let kind = args
        .text("cuda_sync_kind")
        .or_else(|| ev.name.clone())
        .and_then(|k| code(SYNC_KINDS, &k))
        .unwrap_or(0);
    let minus_one_is_none = |v: Option<i64>| match v {
        None | Some(-1) => INVALID,
        Some(v) => v,
    };
    let stream = minus_one_is_none(args.int("stream"));
    let event_id = minus_one_is_none(args.int("wait_on_cuda_event_id"));
    let context = args.int("context");
    let mut sync_id = 0;
    if let Some(record) = args
        .int("wait_on_cuda_event_record_corr_id")
        .filter(|r| *r != -1)
    {
        *next_sync_id += 1;
        sync_id = *next_sync_id;
        events.push(&[
            V::I(sync_id),
            V::I(record),
            opt(args.int("device").or_else(|| id_int(ev.pid))),
            opt(context),
            // the stream the event was recorded on (what the critical path's waits start from)
            opt(args.int("wait_on_stream").filter(|s| *s != -1)),
            V::N,
            V::I(event_id),
            V::N,
            V::N,
            V::N,
            V::N,
        ]);
    }
    t.push(&[
        V::I(kind),
        V::I(span.start),
        V::I(span.end),
        opt(context),
        V::I(stream),
        V::I(args.int("correlation").unwrap_or(0)),
        V::I(event_id),
        V::I(sync_id),
    ]);
}

pub fn overhead(t: &mut Table, ev: &Event, span: Span) {
    t.push(&[
        V::I(span.start),
        V::I(span.end),
        V::N,
        V::S(ev.name.as_deref().unwrap_or("Unknown")),
        V::N,
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_triples_read_as_serde_reads_them() {
        for raw in [
            "[4, 2, 1]",
            "[ -1 ,0,\n 7 ]",
            "[1, 2]",
            "[1, 2, 3, 4]",
            "[1.5, 2, 3]",
            "[]",
            "{}",
            "\"x\"",
        ] {
            let serde = serde_json::from_str::<[i64; 3]>(raw).ok();
            assert_eq!(int_triple(raw), serde, "{raw}");
        }
    }

    #[test]
    fn memcpy_names_give_copy_and_memory_kinds() {
        assert_eq!(memcpy_kinds("Memcpy DtoH (Device -> Pageable)"), (2, 3, 1));
        assert_eq!(memcpy_kinds("Memcpy HtoD (Pinned -> Device)"), (1, 2, 3));
        assert_eq!(memcpy_kinds("Memcpy PtoP (Device -> Device)"), (10, 3, 3));
        assert_eq!(memcpy_kinds("Memcpy HtoD (Host -> Device)"), (1, 0, 3));
        assert_eq!(memcpy_kinds("Memcpy"), (0, 0, 0));
        assert_eq!(memset_kind("Memset (Device)"), 3);
        assert_eq!(memset_kind("Memset"), 0);
    }

    #[test]
    fn categories_map_in_current_and_legacy_spellings() {
        let ev = |ph: &str, cat: &str| Event {
            ph: Some(ph.to_string().into()),
            cat: Some(cat.to_string().into()),
            ..Event::default()
        };
        assert_eq!(classify(&ev("X", "Kernel")), Class::Kernel);
        assert_eq!(classify(&ev("X", "Runtime")), Class::Runtime);
        assert_eq!(classify(&ev("X", "Operator")), Class::Cpu);
        assert_eq!(classify(&ev("i", "kernel")), Class::Cpu);
        assert_eq!(
            classify(&ev("f", "async_cpu_to_gpu")),
            Class::LaunchFlow { start: false }
        );
        assert_eq!(classify(&ev("s", "fwdbwd")), Class::Cpu);
    }
}
