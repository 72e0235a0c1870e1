//! Split exports (`--max-size`): a Chrome trace and `convert`'s traces cut into parts (each
//! a complete trace under budget, their union the whole minus the flows cut), a `.pftrace`
//! cut into parts (each decodes, with Perfetto's own classes too, passes the structural
//! checks of `perfetto.rs`, is under budget, and the parts' events are the whole trace's
//! minus the links cut), and merged traces (Chrome, `.pftrace`) cut into parts.

use std::path::Path;
use std::process::{Command, Output};

use prost::Message;
use serde_json::Value;
use tracesql::sink::perfetto::proto::TracePacket;
use tracesql::synth::{write_window, SynthConfig};

use crate::merge::load;
use crate::perfetto::{decode, gunzip, perfetto_python, structure};

fn tracesql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

fn synth(dir: &Path, events: u64, seed: u64) {
    write_window(&SynthConfig::new(events, seed), dir).unwrap();
}

fn is_event(p: &TracePacket) -> bool {
    p.track_event.is_some() || p.gpu_render_stage_event.is_some() || p.gpu_counter_event.is_some()
}

/// An event's links (launch correlations, waits), and its bytes with them taken out.
fn unlinked(p: &TracePacket) -> (usize, Vec<u8>) {
    let mut p = p.clone();
    let mut links = 0;
    if let Some(c) = p
        .track_event
        .as_mut()
        .and_then(|e| e.gpu_correlation.as_mut())
    {
        links += c.render_stage_submission_event_ids.len();
        c.render_stage_submission_event_ids.clear();
    }
    if let Some(s) = &mut p.gpu_render_stage_event {
        links += s.event_wait_ids.len();
        s.event_wait_ids.clear();
    }
    (links, p.encode_to_vec())
}

#[test]
fn pftrace_parts_decode_pass_the_structure_checks_fit_and_hold_the_whole_minus_cut_links() {
    let dir = tempfile::tempdir().unwrap();
    let window = dir.path().join("w");
    synth(&window, 6000, 8);
    let whole = dir.path().join("whole.pftrace");
    let out = tracesql(&[
        "export",
        "-w",
        window.to_str().unwrap(),
        "-o",
        whole.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole_bytes = gunzip(&whole);
    let all = decode(&whole_bytes);
    assert!(structure(&all).is_empty(), "{:?}", structure(&all));
    let (headers, events): (Vec<&TracePacket>, Vec<&TracePacket>) =
        all.iter().partition(|p| !is_event(p));
    let budget = whole_bytes.len() as u64 / 4;
    let output = dir.path().join("split.pftrace");
    let out = tracesql(&[
        "export",
        "-w",
        window.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--max-size",
        &budget.to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = dir.path().join("split.pftrace.parts.json");
    let index: Value = serde_json::from_slice(&std::fs::read(&listing).unwrap()).unwrap();
    let parts = index["parts"].as_array().unwrap();
    assert!(
        parts.len() >= 4,
        "{} parts under a quarter of the trace",
        parts.len()
    );
    let python = perfetto_python();
    let mut union = Vec::new();
    let mut kept_links = 0;
    let mut last = f64::NEG_INFINITY;
    for part in parts {
        let file = dir.path().join(part["file"].as_str().unwrap());
        let bytes = gunzip(&file);
        assert!(
            bytes.len() as u64 <= budget,
            "{}: {} bytes",
            file.display(),
            bytes.len()
        );
        assert_eq!(bytes.len() as u64, part["bytes"].as_u64().unwrap());
        let packets = decode(&bytes);
        let problems = structure(&packets);
        assert!(problems.is_empty(), "{}: {problems:?}", file.display());
        // every packet that is not an event, in its order
        let theirs: Vec<&TracePacket> = packets.iter().filter(|p| !is_event(p)).collect();
        assert_eq!(theirs, headers, "{}: its header packets", file.display());
        let mine: Vec<&TracePacket> = packets.iter().filter(|p| is_event(p)).collect();
        assert_eq!(mine.len() as u64, part["events"].as_u64().unwrap());
        // successive time ranges
        let start = part["start_us"].as_f64().unwrap();
        assert!(
            start > last,
            "{}: starts at {start}, before {last}",
            file.display()
        );
        last = part["last_us"].as_f64().unwrap();
        for p in mine {
            let (links, bytes) = unlinked(p);
            kept_links += links;
            union.push(bytes);
        }
        if let Some(python) = &python {
            let script = "import gzip,sys\n\
                from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n\
                t=pb.Trace(); t.ParseFromString(gzip.open(sys.argv[1]).read())\n\
                print(len(t.packet))";
            let out = Command::new(python)
                .args(["-c", script, file.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let decoded = String::from_utf8(out.stdout).unwrap();
            assert_eq!(
                decoded.trim(),
                packets.len().to_string(),
                "{}",
                file.display()
            );
        }
    }
    let cut = assert_union_is_the_whole_minus_cut_links(&events, union, kept_links, &index);
    assert!(cut > 0, "quarter parts cut some launch link");
}

/// Assert that the parts' events (`union`: each without its links, `kept_links` of them
/// in all) are the whole trace's `events`, and that the links missing are those the listing
/// `index` counts as cut. Their count.
fn assert_union_is_the_whole_minus_cut_links(
    events: &[&TracePacket],
    mut union: Vec<Vec<u8>>,
    kept_links: usize,
    index: &Value,
) -> u64 {
    let mut whole_links = 0;
    let mut want: Vec<Vec<u8>> = (events.iter())
        .map(|p| {
            let (links, bytes) = unlinked(p);
            whole_links += links;
            bytes
        })
        .collect();
    want.sort();
    union.sort();
    assert!(union == want, "the parts' events differ from the whole's");
    let cut = index["cut_flows"].as_u64().unwrap();
    assert_eq!(whole_links - kept_links, cut as usize);
    cut
}

#[test]
fn a_merged_chrome_trace_splits_into_parts_holding_every_window() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    for rank in 0..2 {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            3000,
            50 + rank,
        );
    }
    let whole = dir.path().join("whole.json");
    let out = tracesql(&[
        "export",
        "-w",
        archive.to_str().unwrap(),
        "-o",
        whole.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events_of = |path: &Path| load(path)["traceEvents"].as_array().unwrap().clone();
    let all = events_of(&whole);
    let output = dir.path().join("split.json.gz");
    let out = tracesql(&[
        "export",
        "-w",
        archive.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--max-size",
        "1MB",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("split.parts.json")).unwrap())
            .unwrap();
    let parts = index["parts"].as_array().unwrap();
    assert!(parts.len() >= 2, "{} parts", parts.len());
    let meta: Vec<&Value> = all.iter().filter(|e| e["ph"] == "M").collect();
    let mut union = Vec::new();
    for part in parts {
        let file = dir.path().join(part["file"].as_str().unwrap());
        let events = events_of(&file);
        let part_meta: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(part_meta, meta, "{}: every window's names", file.display());
        union.extend(events.into_iter().filter(|e| e["ph"] != "M"));
    }
    let text = |e: &Value| serde_json::to_string(e).unwrap();
    let mut union: Vec<String> = union.iter().map(text).collect();
    let mut rest: Vec<String> = all.iter().filter(|e| e["ph"] != "M").map(text).collect();
    union.sort();
    rest.sort();
    // every event of every window is in one part, but the flows cut
    let mut missing = 0;
    let mut j = 0;
    for e in &rest {
        if j < union.len() && union[j] == *e {
            j += 1;
        } else {
            missing += 1;
            let e: Value = serde_json::from_str(e).unwrap();
            assert!(
                matches!(e["ph"].as_str(), Some("s" | "t" | "f")),
                "lost {e}"
            );
        }
    }
    assert_eq!(j, union.len(), "the parts hold events the whole does not");
    assert_eq!(missing, index["cut_flow_events"].as_u64().unwrap());
    for rank in 0..2 {
        let label = format!("rank {rank} · ");
        assert!(
            union.iter().any(|e| e.contains(&label))
                || meta.iter().any(|e| text(e).contains(&label)),
            "no event of rank {rank}"
        );
    }
}

#[test]
fn a_merged_pftrace_splits_into_parts_holding_every_windows_packets() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    for rank in 0..2 {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            3000,
            60 + rank,
        );
    }
    let export = |output: &Path, max_size: Option<&str>| {
        let mut args = vec![
            "export",
            "-w",
            archive.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
        ];
        args.extend(max_size.iter().flat_map(|m| ["--max-size", m]));
        let out = tracesql(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let whole = dir.path().join("whole.pftrace");
    export(&whole, None);
    let whole_bytes = gunzip(&whole);
    let all = decode(&whole_bytes);
    let (headers, events): (Vec<&TracePacket>, Vec<&TracePacket>) =
        all.iter().partition(|p| !is_event(p));
    // each window on a sequence of its own
    let sequences = |packets: &[&TracePacket]| {
        let mut s: Vec<u32> = (packets.iter())
            .filter_map(|p| p.trusted_packet_sequence_id)
            .collect();
        s.sort();
        s.dedup();
        s
    };
    assert_eq!(sequences(&events), [1, (1 << 16) + 1]);
    let budget = whole_bytes.len() as u64 / 3;
    let output = dir.path().join("split.pftrace");
    export(&output, Some(&budget.to_string()));
    let listing = dir.path().join("split.pftrace.parts.json");
    let index: Value = serde_json::from_slice(&std::fs::read(&listing).unwrap()).unwrap();
    let parts = index["parts"].as_array().unwrap();
    assert!(parts.len() >= 3, "{} parts under a third", parts.len());
    let (mut union, mut kept_links) = (Vec::new(), 0);
    for part in parts {
        let file = dir.path().join(part["file"].as_str().unwrap());
        let bytes = gunzip(&file);
        assert!(bytes.len() as u64 <= budget, "{}", file.display());
        let packets = decode(&bytes);
        // the merge record, and every window's clock, tracks and interned data, in order
        let theirs: Vec<&TracePacket> = packets.iter().filter(|p| !is_event(p)).collect();
        assert_eq!(theirs, headers, "{}: its header packets", file.display());
        let mine: Vec<&TracePacket> = packets.iter().filter(|p| is_event(p)).collect();
        assert_eq!(mine.len() as u64, part["events"].as_u64().unwrap());
        for p in mine {
            let (links, bytes) = unlinked(p);
            kept_links += links;
            union.push(bytes);
        }
    }
    assert_union_is_the_whole_minus_cut_links(&events, union, kept_links, &index);
}

/// The events of the Chrome trace at `path`, metadata (`M`) and the others apart, as
/// canonical texts.
fn events_apart(path: &Path) -> (Vec<String>, Vec<String>) {
    let doc = load(path);
    let (mut meta, mut other) = (Vec::new(), Vec::new());
    for e in doc["traceEvents"].as_array().unwrap() {
        let text = serde_json::to_string(e).unwrap();
        match e["ph"] == "M" {
            true => meta.push(text),
            false => other.push(text),
        }
    }
    meta.sort();
    other.sort();
    (meta, other)
}

fn uncompressed_len(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap();
    match path.extension().is_some_and(|e| e == "gz") {
        true => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .unwrap();
            out.len() as u64
        }
        false => bytes.len() as u64,
    }
}

#[test]
fn split_parts_are_complete_traces_under_budget_whose_union_is_the_whole_minus_cut_flows() {
    let dir = tempfile::tempdir().unwrap();
    let window = dir.path().join("w");
    synth(&window, 6000, 8);
    let whole = dir.path().join("whole.json");
    let out = tracesql(&[
        "export",
        "-w",
        window.to_str().unwrap(),
        "-o",
        whole.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (meta, all) = events_apart(&whole);
    let budget: u64 = 1_000_000;
    for name in ["split.json", "split.json.gz"] {
        let output = dir.path().join(name);
        let out = tracesql(&[
            "export",
            "-w",
            window.to_str().unwrap(),
            "-o",
            output.to_str().unwrap(),
            "--max-size",
            "1MB",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let index: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("split.parts.json")).unwrap())
                .unwrap();
        let parts = index["parts"].as_array().unwrap();
        assert!(
            parts.len() >= 3,
            "{} parts for a {} byte trace",
            parts.len(),
            std::fs::metadata(&whole).unwrap().len()
        );
        let mut union = Vec::new();
        let mut last_end = f64::NEG_INFINITY;
        for part in parts {
            let file = dir.path().join(part["file"].as_str().unwrap());
            let size = uncompressed_len(&file);
            assert!(size <= budget, "{}: {size} bytes", file.display());
            assert_eq!(size, part["bytes"].as_u64().unwrap(), "{}", file.display());
            let doc = load(&file);
            assert_eq!(
                doc["traceName"],
                load(&whole)["traceName"]
                    .as_str()
                    .unwrap()
                    .replace("whole.json", name)
            );
            assert!(
                doc.get("deviceProperties").is_some(),
                "{}: metadata",
                file.display()
            );
            let (part_meta, events) = events_apart(&file);
            assert_eq!(
                part_meta,
                meta,
                "{}: every part names every process and thread",
                file.display()
            );
            // parts cover successive time ranges
            let start = part["start_us"].as_f64().unwrap();
            assert!(
                start > last_end,
                "{}: starts at {start}, before {last_end}",
                file.display()
            );
            last_end = part["last_us"].as_f64().unwrap();
            union.extend(events);
        }
        union.sort();
        // the union is the whole minus the flows cut, which are flow events only
        let mut missing = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < all.len() {
            if j < union.len() && union[j] == all[i] {
                j += 1;
            } else {
                missing.push(&all[i]);
            }
            i += 1;
        }
        assert_eq!(j, union.len(), "the parts hold events the whole does not");
        assert_eq!(
            missing.len() as u64,
            index["cut_flow_events"].as_u64().unwrap()
        );
        assert!(
            index["cut_flows"].as_u64().unwrap() > 0,
            "1 MB parts cut some flow"
        );
        for e in &missing {
            let e: Value = serde_json::from_str(e).unwrap();
            assert!(
                matches!(e["ph"].as_str(), Some("s" | "t" | "f")),
                "lost a non-flow event {e}"
            );
        }
    }
}

#[test]
fn convert_max_size_splits_each_windows_trace() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    for rank in 0..2 {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            4000,
            40 + rank,
        );
    }
    let traces = dir.path().join("traces");
    let out = tracesql(&[
        "convert",
        archive.to_str().unwrap(),
        "--output",
        traces.to_str().unwrap(),
        "--max-size",
        "1MB",
        "-j",
        "1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for rank in 0..2 {
        let listing = traces.join(format!("rank={rank}/window_id=000001.parts.json"));
        let index: Value = serde_json::from_slice(&std::fs::read(&listing).unwrap()).unwrap();
        let parts = index["parts"].as_array().unwrap();
        assert!(
            parts.len() >= 2,
            "{}: {} parts",
            listing.display(),
            parts.len()
        );
        for part in parts {
            let file = listing.with_file_name(part["file"].as_str().unwrap());
            assert!(uncompressed_len(&file) <= 1_000_000, "{}", file.display());
            assert!(!load(&file)["traceEvents"].as_array().unwrap().is_empty());
        }
        assert!(
            !traces
                .join(format!("rank={rank}/window_id=000001.json.gz"))
                .exists(),
            "a split trace is written as parts only"
        );
    }
}
