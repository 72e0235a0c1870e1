//! Merged `.pftrace` exports of an archive: each window's packets in the merged trace are
//! its single export's, renamed as `src/sink/perfetto/remap.rs` documents (written out again
//! here) and shifted; the merged trace decodes with Perfetto's own Python package.

use std::process::Command;

use tracesql::export::{Align, MergeConfig};

use super::merge::{synth, FLOW_STRIDE, PID_STRIDE};

/// A single export's packet as the merged trace holds it for window `ordinal` (the
/// renaming `src/sink/perfetto/remap.rs` documents, written out again here).
fn renamed(
    mut p: tracesql::sink::perfetto::proto::TracePacket,
    ordinal: i64,
    prefix: &str,
    shift_ns: i64,
) -> tracesql::sink::perfetto::proto::TracePacket {
    let pid = |v: i64| -> i64 {
        let base = (ordinal + 1) * PID_STRIDE;
        match (-(1 << 22)..(1 << 22)).contains(&v) {
            true => base + v,
            false => base + (1 << 22) + v.rem_euclid(1 << 22),
        }
    };
    let mask = (ordinal as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let event_id = |id: &mut u64| *id += ordinal as u64 * FLOW_STRIDE as u64;
    let gpu = |g: &mut i32| *g += ordinal as i32 * 100;
    let name = |n: &mut Option<String>| {
        if let Some(n) = n {
            *n = format!("{prefix}{n}");
        }
    };
    if let Some(ts) = &mut p.timestamp {
        *ts = (*ts as i64 + shift_ns) as u64;
    }
    if let Some(seq) = &mut p.trusted_packet_sequence_id {
        *seq += ordinal as u32 * (1 << 16);
    }
    if let Some(c) = &mut p.clock_snapshot {
        for clock in &mut c.clocks {
            clock.timestamp = clock.timestamp.map(|t| (t as i64 + shift_ns) as u64);
        }
    }
    if let Some(t) = &mut p.track_descriptor {
        t.uuid = t.uuid.map(|u| u ^ mask);
        t.parent_uuid = t.parent_uuid.map(|u| u ^ mask);
        if let Some(process) = &mut t.process {
            process.pid = process.pid.map(|v| pid(v.into()) as i32);
            name(&mut process.process_name);
        }
        if let Some(thread) = &mut t.thread {
            thread.pid = thread.pid.map(|v| pid(v.into()) as i32);
            thread.tid = thread.tid.map(pid);
        }
    }
    if let Some(e) = &mut p.track_event {
        e.track_uuid = e.track_uuid.map(|u| u ^ mask);
        if let Some(c) = &mut e.gpu_correlation {
            c.render_stage_submission_event_ids
                .iter_mut()
                .for_each(event_id);
        }
    }
    if let Some(r) = &mut p.gpu_render_stage_event {
        r.event_id.iter_mut().for_each(event_id);
        r.event_wait_ids.iter_mut().for_each(event_id);
        r.gpu_id.iter_mut().for_each(gpu);
    }
    if let Some(i) = &mut p.interned_data {
        for d in &mut i.gpu_counter_descriptors {
            d.gpu_id.iter_mut().for_each(gpu);
            for spec in d.counter_descriptor.iter_mut().flat_map(|c| &mut c.specs) {
                name(&mut spec.name);
            }
        }
        i.gpu_specifications
            .iter_mut()
            .for_each(|s| name(&mut s.name));
        for c in &mut i.graphics_contexts {
            c.pid = c.pid.map(|v| pid(v.into()) as i32);
        }
    }
    p
}

#[tokio::test]
async fn each_window_of_a_merged_pftrace_is_its_single_export_renamed_and_shifted() {
    use std::collections::HashSet;
    use tracesql::export::{export_merged_pftrace, export_pftrace, PftraceConfig};

    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    let offsets = [0_i64, 3_000_000, -2_000_000];
    for (rank, offset) in offsets.iter().enumerate() {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            3000,
            30,
            *offset,
        );
    }
    let merged = dir.path().join("merged.pftrace");
    let single = PftraceConfig {
        compression_level: 1,
        ..Default::default()
    };
    let summary = export_merged_pftrace(
        &MergeConfig {
            archive: archive.clone(),
            output: merged.clone(),
            align: Align::Collectives,
            ..Default::default()
        },
        &single,
    )
    .await
    .unwrap();
    let packets = crate::perfetto::decode(&crate::perfetto::gunzip(&merged));
    // the record track first, then each window's packets in turn
    let record = &packets[0].track_descriptor;
    assert!(record.is_some(), "the merge record leads the trace");
    let mut at = 1;
    let mut uuids = HashSet::new();
    let mut event_ids = HashSet::new();
    for (ordinal, w) in summary.windows.iter().enumerate() {
        let one = dir.path().join(format!("single{ordinal}.pftrace"));
        export_pftrace(&PftraceConfig {
            window: archive.join(&w.partition),
            output: one.clone(),
            ..single.clone()
        })
        .await
        .unwrap();
        let mine = crate::perfetto::decode(&crate::perfetto::gunzip(&one));
        assert!(crate::perfetto::structure(&mine).is_empty());
        let prefix = format!("{} · ", w.label);
        let theirs = &packets[at..at + mine.len()];
        at += mine.len();
        for (k, (want, got)) in mine.into_iter().zip(theirs).enumerate() {
            let want = renamed(want, ordinal as i64, &prefix, w.shift_ns);
            assert!(
                &want == got,
                "{}: packet {k} differs:\n{want:?}\n{got:?}",
                w.partition
            );
        }
        for p in theirs {
            if let Some(t) = &p.track_descriptor {
                assert!(
                    uuids.insert(t.uuid.unwrap()),
                    "track uuid repeats across windows"
                );
            }
            if let Some(r) = &p.gpu_render_stage_event {
                assert!(
                    event_ids.insert(r.event_id.unwrap()),
                    "render event id repeats"
                );
            }
        }
        assert!(
            (w.offset_ns + offsets[ordinal]).abs() <= 1000,
            "{}: offset {} for a clock {} off",
            w.partition,
            w.offset_ns,
            offsets[ordinal]
        );
    }
    assert_eq!(at, packets.len(), "packets beyond the windows'");
    // Perfetto's own classes decode it
    let Some(python) = crate::perfetto::perfetto_python() else {
        return;
    };
    let script = "import gzip,sys\n\
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb\n\
        t=pb.Trace(); t.ParseFromString(gzip.open(sys.argv[1]).read())\n\
        names=sorted({p.track_descriptor.process.process_name for p in t.packet if p.track_descriptor.HasField('process')})\n\
        print(len(t.packet)); print(len({p.trusted_packet_sequence_id for p in t.packet if p.trusted_packet_sequence_id})); print('|'.join(names))";
    let out = Command::new(python)
        .args(["-c", script, merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], packets.len().to_string());
    assert_eq!(lines[1], "3", "one packet sequence per window");
    for label in ["rank 0 · ", "rank 1 · ", "rank 2 · "] {
        assert!(lines[2].contains(label), "{}", lines[2]);
    }
}
