//! Known order: a kernel table written in time order per stream claims it, and a sort by
//! stream and time over a claimed table is one pass (engine::stream_order) that gives the
//! sort's answer, even when the claim is wrong.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::prelude::SessionContext;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use tracesql::window::row_order::{ROW_ORDER_KEY, STREAM_ROW_ORDER};
use tracesql::window::writer::{Table, V};

use crate::support::{open, rows};

/// A kernel row: (device, stream, start and end or None, correlation id).
type Kernel = (i64, i64, Option<(i64, i64)>, i64);

/// Kernels on 2 devices x 3 streams (stream ids shared by the devices), each stream's in time
/// order with ties and a few null starts at its end; `disorder` swaps two of one stream's.
fn kernels(seed: u64, n: usize, disorder: bool) -> Vec<Kernel> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // each stream's last (start, end)
    let mut last = [[(1_000i64, 1_000i64); 3]; 2];
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (device, stream) = ((next() % 2) as usize, (next() % 3) as usize);
        let (start, end) = &mut last[device][stream];
        *start += (next() % 4) as i64 * 5; // += 0: a tie with the stream's last start
        *end = (*start + 1 + (next() % 3) as i64).max(*end);
        // the last rows have no times: a null time comes after every time
        let times = (i + 5 < n).then_some((*start, *end));
        out.push((device as i64, stream as i64 + 7, times, i as i64 + 1));
    }
    if disorder {
        let on_8 = |k: &Kernel, device: i64| k.0 == device && k.1 == 8 && k.2.is_some();
        let first = out.iter().position(|k| on_8(k, 0)).unwrap();
        let later = out.iter().rposition(|k| on_8(k, 0)).unwrap();
        out.swap(first, later);
    }
    out
}

/// Write `kernels` with the window writer; whether it claimed the order.
fn write_with_the_writer(dir: &Path, kernels: &[Kernel]) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    let optional = ["metadata", "logical_lane", "lane_name"];
    let mut table = Table::new(dir, "kernel", 1, &optional, &[]);
    for (device, stream, times, corr) in kernels {
        let (start, end) = match times {
            Some((start, end)) => (V::I(*start), V::I(*end)),
            None => (V::N, V::N),
        };
        let mut row = vec![
            start,
            end,
            V::I(*device),
            V::I(1),
            V::I(*stream),
            V::I(*corr),
        ];
        row.extend([V::I(0), V::I(0), V::S("k"), V::N]);
        row.extend([V::I(1); 13]);
        row.extend([V::N; 3]);
        table.push(&row);
    }
    table.finish().unwrap();
    claim(&dir.join("kernel.parquet")).is_some()
}

fn claim(file: &Path) -> Option<String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(file).unwrap());
    reader
        .unwrap()
        .schema()
        .metadata()
        .get(ROW_ORDER_KEY)
        .cloned()
}

/// Copy `from`'s kernel.parquet into `to` in small row groups (so a scan splits), with the
/// claim or without it, whatever the rows are.
fn copy_claiming(from: &Path, to: &Path, claimed: bool) {
    std::fs::create_dir_all(to).unwrap();
    let file = std::fs::File::open(from.join("kernel.parquet")).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let schema = Arc::new(Schema::new(batches[0].schema().fields().clone()));
    let claim = KeyValue::new(ROW_ORDER_KEY.into(), STREAM_ROW_ORDER.to_string());
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(700))
        .set_key_value_metadata(claimed.then(|| vec![claim]))
        .build();
    let out = std::fs::File::create(to.join("kernel.parquet")).unwrap();
    let mut writer = ArrowWriter::try_new(out, schema.clone(), Some(props)).unwrap();
    for batch in batches {
        let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec()).unwrap();
        writer.write(&batch).unwrap();
    }
    writer.close().unwrap();
}

/// A catalog over `dir` whose scans split the file in four, in small batches.
async fn split_four(dir: &Path) -> SessionContext {
    let ctx = open(dir).await;
    for set in [
        "SET datafusion.execution.target_partitions = 4",
        "SET datafusion.optimizer.repartition_file_min_size = 0",
        // more batches than a small file would make: DataFusion splits only larger inputs
        "SET datafusion.execution.batch_size = 128",
    ] {
        ctx.sql(set).await.unwrap().collect().await.unwrap();
    }
    ctx
}

/// The queries (their rows compared as sorted text: ties may come in any order).
const QUERIES: [&str; 4] = [
    "select stream_id, start_ns, end_ns, \
       start_ns - lag(end_ns) over (partition by stream_id order by start_ns, end_ns) as gap \
     from kernel",
    "select device_id, stream_id, start_ns, \
       lead(start_ns) over (partition by device_id, context_id, stream_id order by start_ns) \
     from kernel",
    "select correlation_id, row_number() over \
       (partition by device_id, stream_id order by start_ns, correlation_id) from kernel",
    "select stream_id, start_ns, end_ns, correlation_id from kernel \
     order by stream_id desc, start_ns, end_ns, correlation_id",
];

async fn plan(ctx: &SessionContext, sql: &str) -> String {
    rows(ctx, &format!("explain {sql}")).await.join("\n")
}

async fn answers(ctx: &SessionContext) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (i, sql) in QUERIES.iter().enumerate() {
        let mut got = rows(ctx, sql).await;
        if i < 3 {
            got.sort();
        }
        out.push(got);
    }
    out
}

#[tokio::test]
async fn a_table_in_time_order_per_stream_is_claimed_and_sorted_by_one_pass_with_the_sorts_answer()
{
    for seed in 1..=12u64 {
        let tmp = tempfile::tempdir().unwrap();
        let written = tmp.path().join("written");
        assert!(
            write_with_the_writer(&written, &kernels(seed, 3000, false)),
            "seed {seed}"
        );
        let (claimed, plain) = (tmp.path().join("claimed"), tmp.path().join("plain"));
        copy_claiming(&written, &claimed, true);
        copy_claiming(&written, &plain, false);
        let (fast, slow) = (split_four(&claimed).await, split_four(&plain).await);
        assert_eq!(answers(&fast).await, answers(&slow).await, "seed {seed}");
        if seed == 1 {
            for sql in QUERIES {
                let (with, without) = (plan(&fast, sql).await, plan(&slow, sql).await);
                let sorts =
                    |plan: &str, name: &str| plan.lines().any(|l| l.trim_start().starts_with(name));
                assert!(
                    sorts(&with, "StreamSortExec:") && !sorts(&with, "SortExec:"),
                    "{with}"
                );
                assert!(sorts(&without, "SortExec:"), "{without}");
                assert!(!sorts(&without, "StreamSortExec:"), "{without}");
            }
        }
    }
}

#[tokio::test]
async fn a_wrong_claim_costs_time_never_the_answer() {
    for seed in 1..=12u64 {
        let tmp = tempfile::tempdir().unwrap();
        let written = tmp.path().join("written");
        let claimed = write_with_the_writer(&written, &kernels(seed, 3000, true));
        assert!(
            !claimed,
            "seed {seed}: a stream goes back in time, the writer claims nothing"
        );
        let (lying, plain) = (tmp.path().join("lying"), tmp.path().join("plain"));
        copy_claiming(&written, &lying, true);
        copy_claiming(&written, &plain, false);
        let (fast, slow) = (split_four(&lying).await, split_four(&plain).await);
        assert!(plan(&fast, QUERIES[0]).await.contains("StreamSortExec"));
        assert_eq!(answers(&fast).await, answers(&slow).await, "seed {seed}");
    }
}

#[tokio::test]
async fn the_doctor_lists_the_files_that_claim_no_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (ordered, unordered) = (tmp.path().join("ordered"), tmp.path().join("unordered"));
    write_with_the_writer(&ordered, &kernels(3, 200, false));
    write_with_the_writer(&unordered, &kernels(3, 200, true));
    let unclaimed = |ctx: SessionContext| async move {
        let findings = tracesql::doctor::run(&ctx, &[]).await.unwrap();
        let check = findings
            .iter()
            .find(|f| f.check.name == "row_order_unclaimed");
        check.unwrap().count
    };
    assert_eq!(unclaimed(open(&ordered).await).await, 0);
    assert_eq!(unclaimed(open(&unordered).await).await, 1);
    let ctx = open(&unordered).await;
    let listed = rows(&ctx, "select table_name, claimed from row_order").await;
    assert_eq!(listed, ["kernel|false"]);
}
