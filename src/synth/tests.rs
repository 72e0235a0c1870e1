//! Tests of the synthetic window: determinism, joins the exporter relies on, sizes, layout.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::Path;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use super::*;

fn read(dir: &Path, table: &str) -> Option<RecordBatch> {
    let path = dir.join(format!("{table}.parquet"));
    if !path.exists() {
        return None;
    }
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    Some(concat_batches(&batches[0].schema(), &batches).unwrap())
}

fn ints(b: &RecordBatch, col: &str) -> Vec<i64> {
    let a = b
        .column_by_name(col)
        .unwrap_or_else(|| panic!("no column {col}"));
    a.as_primitive::<Int64Type>()
        .iter()
        .map(|v| v.unwrap_or(0))
        .collect()
}

fn strs(b: &RecordBatch, col: &str) -> Vec<String> {
    let a = b.column_by_name(col).unwrap();
    a.as_string::<i32>()
        .iter()
        .map(|v| v.unwrap_or("").to_string())
        .collect()
}

fn window(events: u64, seed: u64, features: SynthFeatures) -> (tempfile::TempDir, SynthSummary) {
    let tmp = tempfile::tempdir().unwrap();
    let mut cfg = SynthConfig::new(events, seed);
    cfg.features = features;
    let out = tmp.path().join("window_id=000001");
    let s = write_window(&cfg, &out).unwrap();
    (tmp, s)
}

fn dir(t: &tempfile::TempDir) -> std::path::PathBuf {
    t.path().join("window_id=000001")
}

#[test]
fn same_config_gives_identical_bytes() {
    let (a, _) = window(3_000, 42, SynthFeatures::all());
    let (b, _) = window(3_000, 42, SynthFeatures::all());
    let names = |d: &Path| -> BTreeSet<String> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    let (da, db) = (dir(&a), dir(&b));
    assert_eq!(names(&da), names(&db));
    for n in names(&da) {
        assert_eq!(
            std::fs::read(da.join(&n)).unwrap(),
            std::fs::read(db.join(&n)).unwrap(),
            "{n}"
        );
    }
    let (c, _) = window(3_000, 43, SynthFeatures::all());
    assert_ne!(
        std::fs::read(da.join("kernel.parquet")).unwrap(),
        std::fs::read(dir(&c).join("kernel.parquet")).unwrap()
    );
}

#[test]
fn every_gpu_op_has_one_earlier_launch() {
    let (t, _) = window(10_000, 1, SynthFeatures::all());
    let d = dir(&t);
    let mut api: HashMap<i64, (i64, i64)> = HashMap::new(); // corr -> (start, cbid)
    for table in ["cuda_runtime", "cuda_driver"] {
        let b = read(&d, table).unwrap();
        for ((c, s), cb) in ints(&b, "correlation_id")
            .into_iter()
            .zip(ints(&b, "start_ns"))
            .zip(ints(&b, "cbid"))
        {
            assert!(
                api.insert(c, (s, cb)).is_none(),
                "correlation {c} launched twice"
            );
        }
    }
    let mut per_replay: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for table in ["kernel", "gpu_memcpy", "gpu_memset"] {
        let b = read(&d, table).unwrap();
        let starts = ints(&b, "start_ns");
        assert!(
            starts.windows(2).all(|w| w[0] <= w[1]),
            "{table} rows in time order"
        );
        for ((c, s), g) in ints(&b, "correlation_id")
            .into_iter()
            .zip(starts)
            .zip(ints(&b, "graph_node_id"))
        {
            let (api_start, cbid) = api
                .get(&c)
                .copied()
                .unwrap_or_else(|| panic!("{table}: no launch for {c}"));
            assert!(api_start < s, "{table}: launch {c} starts after its op");
            if g != 0 {
                assert_eq!(cbid, 311, "graphed op launched by cudaGraphLaunch");
                assert!(g & 0xFFFF_FFFF != 0);
                assert!(
                    per_replay.entry(c).or_default().insert(g),
                    "node twice in one replay"
                );
            }
        }
    }
    // All nodes of a replay share its correlation id: one graph per replay, full node set.
    assert!(!per_replay.is_empty());
    let mut sizes: BTreeMap<i64, BTreeSet<usize>> = BTreeMap::new();
    for nodes in per_replay.values() {
        let graphs: BTreeSet<i64> = nodes.iter().map(|g| g >> 32).collect();
        assert_eq!(graphs.len(), 1);
        sizes
            .entry(*graphs.iter().next().unwrap())
            .or_default()
            .insert(nodes.len());
    }
    assert!(
        sizes.values().all(|s| s.len() == 1),
        "every replay has the graph's node set"
    );
}

#[test]
fn graph_deps_reference_present_nodes_and_syncs_join_events() {
    let (t, _) = window(10_000, 9, SynthFeatures::all());
    let d = dir(&t);
    let mut present = BTreeSet::new();
    for table in [
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "graph_host_node",
        "graph_event_node",
    ] {
        present.extend(
            ints(&read(&d, table).unwrap(), "graph_node_id")
                .into_iter()
                .filter(|g| *g != 0),
        );
    }
    let deps = read(&d, "graph_deps").unwrap();
    for col in ["node_id", "pred_node_id"] {
        assert!(
            ints(&deps, col).iter().all(|g| present.contains(g)),
            "{col}"
        );
    }
    let ger = read(&d, "graph_event_record").unwrap();
    assert!(ints(&ger, "graph_node_id")
        .iter()
        .all(|g| present.contains(g)));

    let rt = read(&d, "cuda_runtime").unwrap();
    let cbid: HashMap<i64, i64> = ints(&rt, "correlation_id")
        .into_iter()
        .zip(ints(&rt, "cbid"))
        .collect();
    let ev = read(&d, "cuda_event").unwrap();
    let ev_corr: HashMap<i64, i64> = ints(&ev, "cuda_event_sync_id")
        .into_iter()
        .zip(ints(&ev, "correlation_id"))
        .collect();
    let sync = read(&d, "cuda_sync").unwrap();
    let types: BTreeSet<i64> = ints(&sync, "sync_type").into_iter().collect();
    assert_eq!(types, BTreeSet::from([1, 2, 3, 4]));
    for (ty, sid) in ints(&sync, "sync_type")
        .into_iter()
        .zip(ints(&sync, "cuda_event_sync_id"))
    {
        if ty == 1 || ty == 2 {
            let corr = ev_corr
                .get(&sid)
                .copied()
                .expect("event sync joins a cuda_event row");
            assert_eq!(cbid.get(&corr), Some(&135), "recorded by cudaEventRecord");
        }
    }
}

#[test]
fn size_is_on_target_and_buffer_request_is_last() {
    let (t, s) = window(10_000, 3, SynthFeatures::all());
    let d = dir(&t);
    assert!(
        (9_500..=10_500).contains(&s.total_events),
        "{}",
        s.total_events
    );
    let ov = read(&d, "overhead").unwrap();
    let names = strs(&ov, "name");
    assert_eq!(names.last().unwrap(), "Activity Buffer Request");
    let last_start = *ints(&ov, "start_ns").last().unwrap();
    for table in [
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "graph_host_node",
        "graph_event_node",
        "cuda_runtime",
        "cuda_driver",
        "cuda_sync",
    ] {
        let b = read(&d, table).unwrap();
        assert!(
            ints(&b, "end_ns").iter().all(|e| *e < last_start),
            "{table}"
        );
    }
    let ovs = ints(&ov, "start_ns");
    assert!(ovs[..ovs.len() - 1].iter().all(|x| *x < last_start));
    let k = read(&d, "kernel").unwrap();
    let share = k.num_rows() as f64 / s.total_events as f64;
    assert!((0.25..0.5).contains(&share), "kernel share {share}");
}

#[test]
fn small_windows_have_every_kind() {
    let (t, s) = window(200, 5, SynthFeatures::all());
    let have: BTreeSet<&str> = s.rows.iter().map(|r| r.0).collect();
    for table in crate::schema::TABLES {
        assert!(have.contains(table.name), "missing {}", table.name);
    }
    assert!(dir(&t).join(crate::schema::CPU_TRACE_FILE).exists());
    let info = read(&dir(&t), "window_info").unwrap();
    assert_eq!(info.num_rows(), 1);
    assert_eq!(strs(&info, "producer")[0], "tracesql synth");
}

#[test]
fn no_features_gives_the_basic_kinds() {
    let (t, s) = window(2_000, 5, SynthFeatures::none());
    let have: BTreeSet<&str> = s.rows.iter().map(|r| r.0).collect();
    let want = BTreeSet::from([
        "kernel",
        "gpu_memcpy",
        "gpu_memset",
        "cuda_runtime",
        "external_correlation",
        "thread_resource",
        "window_info",
    ]);
    assert_eq!(have, want);
    let k = read(&dir(&t), "kernel").unwrap();
    assert!(k.column_by_name("logical_lane").is_none() && k.column_by_name("metadata").is_none());
    assert!(ints(&k, "graph_node_id").iter().all(|g| *g == 0));
}

#[test]
fn schemas_and_metadata_follow_the_contract() {
    let (t, _) = window(1_000, 11, SynthFeatures::all());
    let d = dir(&t);
    for spec in crate::schema::TABLES {
        let b = read(&d, spec.name).unwrap();
        let schema = b.schema();
        for f in schema.fields() {
            match spec.column(f.name()) {
                Some(c) => assert_eq!(
                    f.data_type(),
                    &c.ty.file_type(),
                    "{}.{}",
                    spec.name,
                    f.name()
                ),
                None => assert!(spec.extra_are_metrics, "{}.{}", spec.name, f.name()),
            }
        }
        for c in spec.columns.iter().filter(|c| c.required) {
            assert!(
                schema.field_with_name(c.name).is_ok(),
                "{}.{}",
                spec.name,
                c.name
            );
        }
        let file = File::open(d.join(spec.file_name())).unwrap();
        let meta = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .metadata()
            .clone();
        let kv: BTreeMap<String, String> = meta
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|k| (k.key.clone(), k.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(kv["tracesql.kind"], spec.name);
        assert_eq!(kv["tracesql.window_id"], "1");
        assert_eq!(kv["tracesql.schema_version"], crate::schema::SCHEMA_VERSION);
    }
}

#[test]
fn cpu_trace_links_external_ids_to_threads() {
    let (t, _) = window(3_000, 13, SynthFeatures::all());
    let d = dir(&t);
    let gz = std::fs::read(d.join(crate::schema::CPU_TRACE_FILE)).unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut text).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let base = doc["baseTimeNanoseconds"].as_i64().unwrap();
    assert_eq!(base % 1000, 0);
    let mut by_ext: HashMap<i64, i64> = HashMap::new(); // external id -> pid
    for e in doc["traceEvents"].as_array().unwrap() {
        let cat = e["cat"].as_str().unwrap_or("");
        if e["ph"] == "X" && (cat == "cpu_op" || cat == "user_annotation") {
            by_ext.insert(
                e["args"]["External id"].as_i64().unwrap(),
                e["pid"].as_i64().unwrap(),
            );
        }
    }
    let ext = read(&d, "external_correlation").unwrap();
    let rt = read(&d, "cuda_runtime").unwrap();
    let pid_of: HashMap<i64, i64> = ints(&rt, "correlation_id")
        .into_iter()
        .zip(ints(&rt, "process_id"))
        .collect();
    let ua = read(&d, "user_annotation").unwrap();
    let regions: BTreeSet<i64> = ints(&ua, "external_id").into_iter().collect();
    for ((x, c), u) in ints(&ext, "external_id")
        .into_iter()
        .zip(ints(&ext, "correlation_id"))
        .zip(ints(&ext, "user_external_id"))
    {
        let pid = by_ext
            .get(&x)
            .copied()
            .expect("external id is a Kineto event");
        if let Some(p) = pid_of.get(&c) {
            assert_eq!(*p, pid);
        }
        assert!(u == x || regions.contains(&u));
    }
}

#[test]
fn refuses_a_non_empty_output_dir() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("x"), b"x").unwrap();
    let err = write_window(&SynthConfig::new(100, 1), tmp.path()).unwrap_err();
    assert!(matches!(err, crate::Error::Usage(_)));
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    write_window(&SynthConfig::new(100, 1), &empty).unwrap();
    assert!(empty.join("kernel.parquet").exists());
    assert!(!tmp.path().join("empty.tmp").exists());
}
