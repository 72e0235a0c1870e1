//! Shared helpers: fixture paths, small Parquet writers, a catalog opener.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::SessionContext;
use parquet::arrow::ArrowWriter;
use tracesql::window::row_order::StreamOrderCheck;
use tracesql::window::Window;

/// The tiny example window converted to Parquet (see data/README.md).
pub fn tiny_window() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny_window")
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// Write `columns` as a Parquet file at `path`. Like our writers, it claims each stream's rows
/// in time order when they are (window::row_order).
pub fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>) {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    if let Some(mut order) = StreamOrderCheck::for_schema(batch.schema_ref()) {
        order.observe(&batch);
        if let Some(claim) = order.claim() {
            writer.append_key_value_metadata(claim);
        }
    }
    writer.close().unwrap();
}

pub fn i64s(values: &[i64]) -> ArrayRef {
    Arc::new(Int64Array::from(values.to_vec()))
}

pub fn i32s(values: &[i32]) -> ArrayRef {
    Arc::new(Int32Array::from(values.to_vec()))
}

pub fn strs(values: &[&str]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// A cuda_runtime file with the given columns replaced or removed.
pub fn runtime_columns() -> Vec<(&'static str, ArrayRef)> {
    vec![
        ("cbid", i64s(&[211, 311])),
        ("start_ns", i64s(&[100, 300])),
        ("end_ns", i64s(&[200, 400])),
        ("process_id", i64s(&[7, 7])),
        ("thread_id", i64s(&[1, 1])),
        ("correlation_id", i64s(&[1, 2])),
    ]
}

pub async fn open(path: &Path) -> SessionContext {
    let window = Window::open(path).unwrap();
    tracesql::catalog::open(&window).await.unwrap()
}

/// Run `sql` and return the rows as text lines "a|b|c".
pub async fn rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
    // a script: a report's last statement reads the tables its first ones made
    let df = tracesql::query::plan_script(ctx, sql).await.unwrap();
    let batches = df.collect().await.unwrap();
    let mut out = Vec::new();
    for batch in batches {
        let cols: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| datafusion::arrow::compute::cast(c, &DataType::Utf8).unwrap())
            .collect();
        for i in 0..batch.num_rows() {
            let cells: Vec<String> = cols
                .iter()
                .map(|c| {
                    let s = c.as_any().downcast_ref::<StringArray>().unwrap();
                    if s.is_null(i) {
                        "NULL".to_string()
                    } else {
                        s.value(i).to_string()
                    }
                })
                .collect();
            out.push(cells.join("|"));
        }
    }
    out
}

use datafusion::arrow::array::Array;

/// CPU seconds (user + system, all threads) the live process `pid` has used, from
/// /proc/PID/stat; None where there is no /proc.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields after the command name, which is in parentheses and may hold spaces
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0) // USER_HZ
}

/// Run `cmd` until it exits; None when it hangs: more than `cpu` seconds of CPU time (wall
/// time would call a case starved on a loaded machine a hang), or ten times that of wall time.
pub fn run_with_cpu_limit(mut cmd: Command, cpu: Duration) -> Option<(Option<i32>, String)> {
    let mut child = cmd
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text).ok();
        text
    });
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let text = reader.join().unwrap();
            return Some((status.code(), text));
        }
        let used = cpu_seconds(child.id()).map_or(started.elapsed(), Duration::from_secs_f64);
        if used > cpu || started.elapsed() > cpu * 10 {
            child.kill().ok();
            child.wait().ok();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Write the Kineto trace `trace` to `dir/NAME.json` and import it (`tracesql import kineto`)
/// into the window `dir/NAME`, which is returned.
pub fn import_trace(trace: &serde_json::Value, dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(trace).unwrap()).unwrap();
    let window = dir.join(name);
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["import", "kineto"])
        .arg(&path)
        .arg("--output")
        .arg(&window)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    window
}

/// The data marks (`class="mark..."`) in the plot `plot` of an HTML page; None without it.
pub fn plot_marks(page: &str, plot: &str) -> Option<usize> {
    let open = page.find(&format!("data-plot=\"{plot}\""))?;
    let svg = &page[open..open + page[open..].find("</svg>")?];
    Some(svg.matches("class=\"mark").count())
}

/// The tests' seeded generator of random tables (xorshift): each call gives a number in 0..m.
pub fn random_below(seed: u64) -> impl FnMut(u64) -> i64 {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
    move |m| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % m) as i64
    }
}

/// Run `cmd` (a tracesql command) and return its output, failing the test with its stderr
/// when it does not succeed.
pub fn succeeded(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
