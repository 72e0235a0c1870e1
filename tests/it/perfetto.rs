//! `tracesql export` to `.pftrace` against the reference: every case of
//! tests/golden/cases.txt is exported (with the oracle's pinned extras: sm_90, process 4242,
//! "python") and checked three ways: (a) a raw wire-format walk that fails on any packed
//! repeated scalar, (b) structural checks on the decoded packets (ids resolve, slices
//! balance per track, render stages have unique event ids, waits and correlations exist), and
//! (c) a decode with the official classes of the PyPI `perfetto` package
//! (tests/perfetto/compare.py, in a venv this test creates) compared with the oracle's
//! pre-encoding content, tests/golden/NAME.pftrace-ir.json.gz.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use prost::Message;
use tracesql::export::{export_pftrace, PftraceConfig};
use tracesql::sink::perfetto::proto::TracePacket;

use crate::export::{cases, golden_dir, window_of};

async fn export(window: &Path, output: &Path) {
    export_pftrace(&PftraceConfig {
        window: window.to_path_buf(),
        output: output.to_path_buf(),
        compression_level: 1,
        arch: Some("sm_90".into()),
        process_id: Some(4242),
        process_name: Some("python".into()),
        ..PftraceConfig::default()
    })
    .await
    .unwrap();
}

pub(crate) fn gunzip(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    assert_eq!(&raw[..2], &[0x1f, 0x8b], "{} is not gzip", path.display());
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
    }
    panic!("varint longer than 10 bytes");
}

/// The fields of one message: (field number, wire type, payload of LEN fields).
fn fields(buf: &[u8]) -> Vec<(u64, u64, &[u8])> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let key = varint(buf, &mut pos);
        let (field, wire) = (key >> 3, key & 7);
        let payload: &[u8] = match wire {
            0 => {
                varint(buf, &mut pos);
                &[]
            }
            1 => {
                pos += 8;
                &[]
            }
            2 => {
                let len = varint(buf, &mut pos) as usize;
                pos += len;
                &buf[pos - len..pos]
            }
            5 => {
                pos += 4;
                &[]
            }
            other => panic!("wire type {other} in a perfetto message"),
        };
        out.push((field, wire, payload));
    }
    assert_eq!(pos, buf.len(), "message overruns its length");
    out
}

/// The repeated scalars of the messages we write, by message path: (field, wire type each
/// element must have). A LEN field there is a packed blob trace_processor misreads.
fn walk(msg: &str, buf: &[u8], packed: &mut Vec<String>) {
    let scalars: &[(u64, u64)] = match msg {
        "TrackEvent" => &[(3, 0), (47, 1)],
        "GpuCorrelation" => &[(1, 0), (2, 0)],
        "GpuRenderStageEvent" => &[(18, 0)],
        "GpuCounterGroupSpec" => &[(4, 0)],
        _ => &[],
    };
    let children: &[(u64, &str)] = match msg {
        "Trace" => &[(1, "TracePacket")],
        "TracePacket" => &[
            (11, "TrackEvent"),
            (53, "GpuRenderStageEvent"),
            (12, "InternedData"),
        ],
        "TrackEvent" => &[(3000, "GpuCorrelation")],
        "InternedData" => &[(47, "InternedGpuCounterDescriptor")],
        "InternedGpuCounterDescriptor" => &[(2, "GpuCounterDescriptor")],
        "GpuCounterDescriptor" => &[(6, "GpuCounterGroupSpec")],
        _ => &[],
    };
    for (field, wire, payload) in fields(buf) {
        if let Some((_, want)) = scalars.iter().find(|(f, _)| *f == field) {
            if wire != *want {
                packed.push(format!("{msg}.{field} has wire type {wire}, not {want}"));
            }
        }
        if let Some((_, child)) = children.iter().find(|(f, _)| *f == field) {
            walk(child, payload, packed);
        }
    }
}

/// Structural problems of a decoded trace; empty when sound.
pub(crate) fn structure(packets: &[TracePacket]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut tracks: HashMap<u64, u64> = HashMap::new();
    let (mut names, mut cats, mut specs, mut ctxs, mut kernels, mut args, mut descs) = (
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
        HashSet::new(),
    );
    for p in packets {
        if let Some(d) = &p.track_descriptor {
            tracks.insert(d.uuid.unwrap(), d.parent_uuid.unwrap_or(0));
        }
        if let Some(i) = &p.interned_data {
            names.extend(i.event_names.iter().map(|n| n.iid.unwrap()));
            cats.extend(i.event_categories.iter().map(|n| n.iid.unwrap()));
            specs.extend(i.gpu_specifications.iter().map(|n| n.iid.unwrap()));
            ctxs.extend(i.graphics_contexts.iter().map(|n| n.iid.unwrap()));
            kernels.extend(i.compute_kernels.iter().map(|n| n.iid.unwrap()));
            args.extend(i.compute_arg_names.iter().map(|n| n.iid.unwrap()));
            descs.extend(i.gpu_counter_descriptors.iter().map(|n| n.iid.unwrap()));
        }
    }
    for (uuid, parent) in &tracks {
        if *parent != 0 && !tracks.contains_key(parent) {
            problems.push(format!("track {uuid}: parent {parent} undefined"));
        }
    }
    let mut event_ids = HashSet::new();
    let mut waits = Vec::new();
    let mut correlations = Vec::new();
    // per track: (ts, +1 begin / -1 end, packet index)
    let mut edges: HashMap<u64, Vec<(u64, i32, usize)>> = HashMap::new();
    for (k, p) in packets.iter().enumerate() {
        if (p.track_event.is_some() || p.gpu_render_stage_event.is_some())
            && p.trusted_packet_sequence_id != Some(1)
        {
            problems.push(format!(
                "packet {k}: sequence id {:?}",
                p.trusted_packet_sequence_id
            ));
        }
        if let Some(e) = &p.track_event {
            let uuid = e.track_uuid.unwrap();
            if !tracks.contains_key(&uuid) {
                problems.push(format!("packet {k}: track {uuid} undefined"));
            }
            let ts = p.timestamp.unwrap();
            match e.r#type {
                Some(1) => {
                    if !names.contains(&e.name_iid.unwrap()) {
                        problems.push(format!("packet {k}: name_iid undefined"));
                    }
                    if e.category_iids.iter().any(|c| !cats.contains(c)) {
                        problems.push(format!("packet {k}: category iid undefined"));
                    }
                    if let Some(c) = &e.gpu_correlation {
                        correlations.extend(c.render_stage_submission_event_ids.iter().copied());
                    }
                    edges.entry(uuid).or_default().push((ts, 1, k));
                }
                Some(2) => edges.entry(uuid).or_default().push((ts, -1, k)),
                other => problems.push(format!("packet {k}: track event type {other:?}")),
            }
        }
        if let Some(r) = &p.gpu_render_stage_event {
            match r.event_id {
                Some(id) if id != 0 => {
                    if !event_ids.insert(id) {
                        problems.push(format!("render stage event id {id} repeats"));
                    }
                }
                _ => problems.push(format!("packet {k}: render stage without an event id")),
            }
            for (what, iid, table) in [
                ("hw_queue_iid", r.hw_queue_iid, &specs),
                ("stage_iid", r.stage_iid, &specs),
                ("context", r.context, &ctxs),
            ] {
                if !iid.is_some_and(|i| table.contains(&i)) {
                    problems.push(format!("packet {k}: {what} {iid:?} undefined"));
                }
            }
            if r.name_iid.is_some_and(|i| !names.contains(&i)) {
                problems.push(format!("packet {k}: render name_iid undefined"));
            }
            if r.kernel_iid.is_some_and(|i| !kernels.contains(&i)) {
                problems.push(format!("packet {k}: kernel_iid undefined"));
            }
            if let Some(l) = &r.launch {
                if l.args
                    .iter()
                    .any(|a| !a.name_iid.is_some_and(|i| args.contains(&i)))
                {
                    problems.push(format!("packet {k}: launch arg name undefined"));
                }
            }
            waits.extend(r.event_wait_ids.iter().copied());
        }
        if let Some(c) = &p.gpu_counter_event {
            if !c.counter_descriptor_iid.is_some_and(|i| descs.contains(&i)) {
                problems.push(format!("packet {k}: counter descriptor undefined"));
            }
        }
    }
    for id in waits.iter().chain(&correlations) {
        if !event_ids.contains(id) {
            problems.push(format!("wait/correlation id {id} names no render stage"));
        }
    }
    for (uuid, mut e) in edges {
        let balance: i32 = e.iter().map(|x| x.1).sum();
        if balance != 0 {
            problems.push(format!("track {uuid}: BEGIN/END off by {balance}"));
        }
        // Ends first on a tie: a slice ending where the next starts is closed before it.
        e.sort_by_key(|&(ts, d, k)| (ts, d, k));
        let mut depth = 0;
        for (ts, d, _) in &e {
            depth += d;
            if depth < 0 {
                problems.push(format!("track {uuid}: END without BEGIN at {ts}"));
                break;
            }
        }
    }
    problems
}

pub(crate) fn decode(bytes: &[u8]) -> Vec<TracePacket> {
    fields(bytes)
        .into_iter()
        .map(|(field, wire, payload)| {
            assert_eq!((field, wire), (1, 2), "a Trace holds only packets");
            TracePacket::decode(payload).unwrap()
        })
        .collect()
}

/// A Python with the PyPI `perfetto` package (a shared venv, `crate::venv`). None (said
/// loudly) only when python3 itself is missing; a failed install fails the test.
pub(crate) fn perfetto_python() -> Option<PathBuf> {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED: python3 is missing, .pftrace not decoded with the perfetto package ***\n");
        return None;
    }
    let python = crate::venv::python_with(
        "perfetto",
        &["perfetto==0.59.1", "protobuf"],
        "perfetto.protos.perfetto.trace.perfetto_trace_pb2",
    );
    Some(python.unwrap_or_else(|why| panic!("the perfetto venv: {why}")))
}

#[tokio::test]
async fn pftrace_matches_the_reference_on_every_golden_case() {
    let scratch = tempfile::tempdir().unwrap();
    let python = perfetto_python();
    let compare = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/perfetto/compare.py");
    let mut failures = Vec::new();
    for case in cases() {
        let window = window_of(&case, scratch.path());
        let output = scratch.path().join(format!("{}.pftrace", case.name));
        export(&window, &output).await;
        let bytes = gunzip(&output);

        let mut packed = Vec::new();
        walk("Trace", &bytes, &mut packed);
        assert!(
            packed.is_empty(),
            "{}: packed repeated scalars: {packed:?}",
            case.name
        );

        let packets = decode(&bytes);
        let problems = structure(&packets);
        assert!(problems.is_empty(), "{}: {problems:#?}", case.name);

        if let Some(python) = &python {
            let ir = golden_dir().join(format!("{}.pftrace-ir.json.gz", case.name));
            let out = Command::new(python)
                .arg(&compare)
                .arg(&ir)
                .arg(&output)
                .output()
                .unwrap();
            if !out.status.success() {
                failures.push(format!(
                    "{}:\n{}{}",
                    case.name,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "differs from the reference:\n{}",
        failures.join("\n")
    );
}

#[test]
fn the_wire_walk_catches_a_packed_repeated_scalar() {
    // TrackEvent{category_iids: [1, 2]} packed: field 3, LEN, [1, 2].
    let event = [0x1a, 0x02, 0x01, 0x02];
    let mut packet = vec![0x5a, event.len() as u8];
    packet.extend(event);
    let mut trace = vec![0x0a, packet.len() as u8];
    trace.extend(packet);
    let mut packed = Vec::new();
    walk("Trace", &trace, &mut packed);
    assert_eq!(packed, ["TrackEvent.3 has wire type 2, not 0"]);
}

#[tokio::test]
async fn structure_checks_catch_a_dangling_wait() {
    let scratch = tempfile::tempdir().unwrap();
    let output = scratch.path().join("tiny.pftrace");
    export(&crate::support::tiny_window(), &output).await;
    let mut packets = decode(&gunzip(&output));
    assert!(structure(&packets).is_empty());
    let render = packets
        .iter_mut()
        .find_map(|p| p.gpu_render_stage_event.as_mut())
        .unwrap();
    render.event_wait_ids.push(999_999);
    assert_eq!(
        structure(&packets),
        ["wait/correlation id 999999 names no render stage"]
    );
}
