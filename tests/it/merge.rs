//! Merged exports of an archive (`tracesql export --window ARCHIVE`): each window's events
//! in the merged trace are its single-window export's, renamed and shifted as the trace's
//! `tracesqlMerge` member says (mapped back here from the documented formulas and compared
//! as multisets); `--align collectives` recovers known clock offsets; the DLRM ranks merge
//! with every kernel once, flows within their rank and tracks named per rank.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tracesql::export::{export_chrome, export_merged_chrome, Align, ExportConfig, MergeConfig};
use tracesql::synth::{write_window, SynthConfig};

pub(crate) const PID_STRIDE: i64 = 1 << 24;
pub(crate) const FLOW_STRIDE: i64 = 1 << 42;
const SORT_STRIDE: i64 = 1 << 32;

fn tracesql(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

/// The Chrome trace at `path` (gzipped or not).
pub(crate) fn load(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let bytes = match path.extension().is_some_and(|e| e == "gz") {
        true => {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .unwrap();
            out
        }
        false => bytes,
    };
    serde_json::from_slice(&bytes).unwrap()
}

/// A synthetic window at `dir`, `clock_offset_ns` off the true clock.
pub(crate) fn synth(dir: &Path, events: u64, seed: u64, clock_offset_ns: i64) {
    let mut config = SynthConfig::new(events, seed);
    config.clock_offset_ns = clock_offset_ns;
    write_window(&config, dir).unwrap();
}

/// The merged trace's windows: (ordinal, label prefix, shift ns, partition) from
/// `tracesqlMerge`.
fn windows_of(doc: &Value) -> Vec<(i64, String, i64, String)> {
    let record = &doc["tracesqlMerge"];
    (record["windows"].as_array().unwrap().iter())
        .map(|w| {
            (
                w["ordinal"].as_i64().unwrap(),
                format!("{} · ", w["label"].as_str().unwrap()),
                w["shift_ns"].as_i64().unwrap(),
                w["partition"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Which window an event of the merged trace belongs to, from its pid.
fn ordinal_of(event: &Value, prefixes: &[String]) -> usize {
    match &event["pid"] {
        Value::Number(n) => {
            let pid = n.as_i64().unwrap();
            ((pid as f64 / PID_STRIDE as f64).round() as i64 - 1) as usize
        }
        Value::String(s) => prefixes
            .iter()
            .position(|p| s.starts_with(p.as_str()))
            .unwrap_or_else(|| panic!("pid {s:?} has no window's prefix")),
        other => panic!("pid {other}"),
    }
}

/// A merged event of window `ordinal` as its single export wrote it.
fn map_back(mut event: Value, ordinal: i64, prefix: &str, shift_ns: i64) -> Value {
    let strip = |v: &mut Value| {
        if let Value::String(s) = v {
            *s = s
                .strip_prefix(prefix)
                .expect("renamed with the prefix")
                .to_string();
        }
    };
    let object = event.as_object_mut().unwrap();
    match object.get_mut("pid").unwrap() {
        Value::Number(n) => {
            let pid = n.as_i64().unwrap() - (ordinal + 1) * PID_STRIDE;
            object.insert("pid".into(), pid.into());
        }
        s => strip(s),
    }
    if let Some(ts) = object.get("ts").and_then(Value::as_f64) {
        object.insert("ts".into(), (ts - shift_ns as f64 / 1000.0).into());
    }
    let ph = object
        .get("ph")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if matches!(ph.as_str(), "s" | "t" | "f") {
        if let Some(id) = object.get("id").and_then(Value::as_i64) {
            object.insert("id".into(), (id - ordinal * FLOW_STRIDE).into());
        }
    }
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if ph == "M" {
        let args = object.get_mut("args").unwrap();
        match name.as_str() {
            "process_name" => strip(&mut args["name"]),
            "process_labels" => strip(&mut args["labels"]),
            "process_sort_index" => {
                let v = args["sort_index"].as_i64().unwrap() - ordinal * SORT_STRIDE;
                args["sort_index"] = v.into();
            }
            _ => {}
        }
    }
    event
}

/// Events as comparable texts (keys sorted, without `ts`), each with its `ts` values, sorted.
fn multiset(events: impl IntoIterator<Item = Value>) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for mut e in events {
        let ts = e
            .as_object_mut()
            .unwrap()
            .remove("ts")
            .and_then(|t| t.as_f64());
        let entry = out.entry(serde_json::to_string(&e).unwrap()).or_default();
        entry.push(ts.unwrap_or(f64::NAN));
    }
    for ts in out.values_mut() {
        ts.sort_by(f64::total_cmp);
    }
    out
}

/// Whether two multisets hold the same events, their times equal to the nanosecond (or to
/// two steps of a double, for epoch-µs times, which serde_json parses to within one).
fn same_events(a: &BTreeMap<String, Vec<f64>>, b: &BTreeMap<String, Vec<f64>>) -> bool {
    let close =
        |x: f64, y: f64| (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-3 + x.abs() * 4.5e-16;
    a.len() == b.len()
        && a.iter().all(|(k, ts)| {
            b.get(k).is_some_and(|other| {
                ts.len() == other.len() && ts.iter().zip(other).all(|(x, y)| close(*x, *y))
            })
        })
}

/// Each window's events of the merged trace at `merged`, mapped back, against its single
/// export beside it.
async fn assert_each_window_is_its_single_export(archive: &Path, merged: &Path, scratch: &Path) {
    let doc = load(merged);
    let windows = windows_of(&doc);
    let prefixes: Vec<String> = windows.iter().map(|w| w.1.clone()).collect();
    let mut per_window: Vec<Vec<Value>> = vec![Vec::new(); windows.len()];
    for event in doc["traceEvents"].as_array().unwrap() {
        per_window[ordinal_of(event, &prefixes)].push(event.clone());
    }
    for ((ordinal, prefix, shift, partition), events) in windows.iter().zip(per_window) {
        let single = scratch.join(format!("single{ordinal}.json"));
        export_chrome(&ExportConfig {
            window: archive.join(partition),
            output: single.clone(),
            trace_name: None,
            filter: Default::default(),
        })
        .await
        .unwrap();
        let want = multiset(load(&single)["traceEvents"].as_array().unwrap().clone());
        let got = multiset((events.into_iter()).map(|e| map_back(e, *ordinal, prefix, *shift)));
        let differing: Vec<&String> = (want.keys())
            .filter(|k| got.get(*k).map(Vec::len) != want.get(*k).map(Vec::len))
            .take(3)
            .collect();
        assert!(
            same_events(&got, &want),
            "{partition}: {} merged events mapped back vs {} single; first differing: {differing:?}",
            got.values().map(Vec::len).sum::<usize>(),
            want.values().map(Vec::len).sum::<usize>()
        );
    }
}

#[tokio::test]
async fn each_window_of_a_merged_export_is_its_single_export_renamed_and_shifted() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    // different seeds: different pids, bases (so shifts) and contents per rank
    for (rank, seed) in [(0, 3), (1, 4), (2, 5)] {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            3000,
            seed,
            0,
        );
    }
    let merged = dir.path().join("merged.json.gz");
    let summary = export_merged_chrome(&MergeConfig {
        archive: archive.clone(),
        output: merged.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(summary.windows.len(), 3);
    assert!(
        summary.windows.iter().any(|w| w.shift_ns != 0),
        "the seeds give different bases, so some window is shifted"
    );
    assert_each_window_is_its_single_export(&archive, &merged, dir.path()).await;
}

#[tokio::test]
async fn align_collectives_recovers_each_ranks_clock_offset_within_a_microsecond() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    let offsets = [0_i64, 1_234_000, -5_678_000, 250_000];
    for (rank, offset) in offsets.iter().enumerate() {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            4000,
            11,
            *offset,
        );
    }
    let merged = dir.path().join("merged.json");
    let summary = export_merged_chrome(&MergeConfig {
        archive: archive.clone(),
        output: merged.clone(),
        align: Align::Collectives,
        ..Default::default()
    })
    .await
    .unwrap();
    let record = &load(&merged)["tracesqlMerge"];
    assert_eq!(record["align"], "collectives");
    for (rank, offset) in offsets.iter().enumerate() {
        let w = &summary.windows[rank];
        assert!(
            w.matched.unwrap() > 0,
            "rank {rank}: no collectives matched"
        );
        assert!(
            (w.offset_ns + offset).abs() <= 1000,
            "rank {rank}: offset {} ns recovered for a clock {offset} ns off",
            w.offset_ns
        );
        // on the aligned timeline the ranks coincide again
        assert!(
            w.shift_ns.abs() <= 1000,
            "rank {rank}: shift {}",
            w.shift_ns
        );
        assert_eq!(record["windows"][rank]["offset_ns"], w.offset_ns);
    }
    // --align wall keeps the offsets as recorded
    let wall = export_merged_chrome(&MergeConfig {
        archive: archive.clone(),
        output: dir.path().join("wall.json"),
        ..Default::default()
    })
    .await
    .unwrap();
    for (rank, offset) in offsets.iter().enumerate() {
        assert_eq!(wall.windows[rank].shift_ns, *offset, "rank {rank}");
    }
    // a FILE's offsets are applied as given
    let file = dir.path().join("offsets.txt");
    std::fs::write(
        &file,
        "rank=0 0\nrank=1 -1234us\nrank=2 5678000\nrank=3 -250000ns\n",
    )
    .unwrap();
    let aligned = export_merged_chrome(&MergeConfig {
        archive: archive.clone(),
        output: dir.path().join("file.json"),
        align: Align::File(file),
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(
        aligned.windows.iter().all(|w| w.shift_ns == 0),
        "{aligned:?}"
    );
}

fn dlrm_trace(rank: usize) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kineto");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with(&format!("param_dlrm_worker{rank}_")))
        .unwrap();
    dir.join(name)
}

#[tokio::test]
async fn the_dlrm_ranks_merge_with_every_kernel_once_flows_within_ranks_and_tracks_per_rank() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("dlrm");
    let traces: Vec<String> = (0..4)
        .map(|r| dlrm_trace(r).display().to_string())
        .collect();
    let mut args = vec!["import", "kineto", "--output", archive.to_str().unwrap()];
    args.extend(traces.iter().map(String::as_str));
    let out = tracesql(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = dir.path().join("dlrm.json.gz");
    let out = tracesql(&[
        "export",
        "--window",
        archive.to_str().unwrap(),
        "--output",
        merged.to_str().unwrap(),
        "--align",
        "collectives",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("rank=3/window_id=000001: offset"),
        "{stderr}"
    );
    let doc = load(&merged);
    let windows = windows_of(&doc);
    assert_eq!(windows.len(), 4);
    let prefixes: Vec<String> = windows.iter().map(|w| w.1.clone()).collect();
    assert_eq!(prefixes[3], "rank 3 · ");
    let events = doc["traceEvents"].as_array().unwrap();

    // every kernel of every rank once: as many per rank, with the same names, as the rank's
    // kernel table holds
    for (ordinal, (_, _, _, partition)) in windows.iter().enumerate() {
        let ctx = crate::support::open(&archive.join(partition)).await;
        let want = crate::support::rows(&ctx, "SELECT name FROM kernel ORDER BY name").await;
        let mut got: Vec<String> = (events.iter())
            .filter(|e| e["cat"] == "kernel" && ordinal_of(e, &prefixes) == ordinal)
            .map(|e| e["name"].as_str().unwrap().to_string())
            .collect();
        got.sort();
        assert_eq!(got, want, "{partition}: kernels");
    }
    // flows within ranks: both ends of every flow id in one rank's processes
    let mut flow_ranks: HashMap<(String, i64), Vec<usize>> = HashMap::new();
    for e in events
        .iter()
        .filter(|e| matches!(e["ph"].as_str(), Some("s" | "f")))
    {
        let key = (
            e["cat"].as_str().unwrap_or("").to_string(),
            e["id"].as_i64().unwrap(),
        );
        flow_ranks
            .entry(key)
            .or_default()
            .push(ordinal_of(e, &prefixes));
    }
    assert!(!flow_ranks.is_empty());
    for (key, ranks) in &flow_ranks {
        assert!(
            ranks.iter().all(|r| *r == ranks[0]),
            "flow {key:?} spans ranks {ranks:?}"
        );
        assert_eq!(
            key.1 / FLOW_STRIDE,
            ranks[0] as i64,
            "flow {key:?}: id outside its rank's"
        );
    }
    // tracks named per rank: every process name and label carries its rank's prefix, and
    // each rank's processes sort together, after the previous rank's
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let ordinal = ordinal_of(e, &prefixes);
        match e["name"].as_str().unwrap() {
            "process_name" => assert!(
                e["args"]["name"]
                    .as_str()
                    .unwrap()
                    .starts_with(&prefixes[ordinal]),
                "{e}"
            ),
            "process_labels" => assert!(
                e["args"]["labels"]
                    .as_str()
                    .unwrap()
                    .starts_with(&prefixes[ordinal]),
                "{e}"
            ),
            "process_sort_index" => {
                let index = e["args"]["sort_index"].as_i64().unwrap();
                assert_eq!(index / SORT_STRIDE, ordinal as i64, "{e}");
            }
            _ => {}
        }
    }
    let gpu_names: Vec<&str> = (events.iter())
        .filter(|e| e["name"] == "process_labels")
        .filter_map(|e| e["args"]["labels"].as_str())
        .collect();
    assert!(gpu_names.contains(&"rank 3 · GPU 3"), "{gpu_names:?}");
    // the document has one distributedInfo and deviceProperties: each rank's are in the record
    for (ordinal, (_, _, _, partition)) in windows.iter().enumerate() {
        let entry = &doc["tracesqlMerge"]["windows"][ordinal];
        assert_eq!(entry["distributedInfo"]["rank"], ordinal, "{partition}");
        assert_eq!(entry["deviceProperties"].as_array().map(Vec::len), Some(8));
    }
    assert!(doc.get("distributedInfo").is_none());
    assert_each_window_is_its_single_export(&archive, &merged, dir.path()).await;
}

#[tokio::test]
async fn where_over_partition_columns_picks_the_windows_to_merge() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("ranks");
    for rank in 0..3 {
        synth(
            &archive.join(format!("rank={rank}/window_id=000001")),
            1500,
            20 + rank,
            0,
        );
    }
    let merged = dir.path().join("merged.json");
    let summary = export_merged_chrome(&MergeConfig {
        archive: archive.clone(),
        output: merged.clone(),
        filter: tracesql::export::RowFilter {
            predicate: Some("rank in (0, 2) and kind = 'kernel'".into()),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .unwrap();
    let partitions: Vec<&str> = summary
        .windows
        .iter()
        .map(|w| w.partition.as_str())
        .collect();
    assert_eq!(
        partitions,
        ["rank=0/window_id=000001", "rank=2/window_id=000001"]
    );
    let doc = load(&merged);
    let cats: std::collections::BTreeSet<&str> = (doc["traceEvents"].as_array().unwrap().iter())
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| e["cat"].as_str())
        .collect();
    assert!(
        cats.contains("kernel") && !cats.contains("gpu_memcpy"),
        "{cats:?}"
    );
}
