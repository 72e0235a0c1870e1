//! The HTML report in a real browser: Debian's headless Chromium loads a page rendered from
//! report outputs built by hand (an archive-like `rank` partition column, kernel names full of
//! markup), and the test checks that no console message appeared, that every plot's `<svg>`
//! is in the loaded DOM with the marks the inputs call for, and that a screenshot was drawn.
//! Without Chromium (`apt-get install -y chromium`) the tests print a SKIP line and pass.
//!
//! Chromium reports console messages on stderr (`--enable-logging=stderr --v=0`) as
//! `[pid:tid:MMDD/HHMMSS.micros:INFO:CONSOLE:LINE] "message", source: URL (LINE)`, at INFO
//! whatever the level (error, warn, log); Content-Security-Policy violations and failed
//! loads come the same way. The page has no script, so any console line is a failure.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{Field, Schema};
use tracesql::report::ReportOutput;

const CHROMIUM: &str = "/usr/bin/chromium";
const TIMEOUT: Duration = Duration::from_secs(120);

fn chromium(test: &str) -> Option<&'static Path> {
    let path = Path::new(CHROMIUM);
    if path.exists() {
        return Some(path);
    }
    eprintln!(
        "\n*** SKIPPED {test}: {CHROMIUM} is missing (apt-get install -y chromium); \
         the HTML report was not loaded in a browser ***\n"
    );
    None
}

/// Run headless Chromium on `page` with `extra` flags and a new empty profile; (stdout, stderr).
fn run(browser: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // drain both pipes on threads so a chatty browser never blocks on a full pipe
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        err.read_to_string(&mut s).map(|_| s)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "chromium did not finish within {TIMEOUT:?} on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap().unwrap(), err.join().unwrap().unwrap());
    assert!(status.success(), "chromium failed ({status}):\n{err}");
    (out, err)
}

/// The console messages in Chromium's stderr.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn console_check_catches_a_deliberate_console_error() {
    let Some(browser) = chromium("console_check_catches_a_deliberate_console_error") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("scratch.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>scratch</p>\
         <script>console.error('deliberate console error');</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = run(
        browser,
        &page,
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
    );
    let lines = console_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("\"deliberate console error\""),
        "{}",
        lines[0]
    );
}

fn column(name: &str, array: ArrayRef) -> (String, ArrayRef) {
    (name.to_string(), array)
}

fn output(name: &str, keys: &[&str], columns: Vec<(String, ArrayRef)>) -> ReportOutput {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a)| Field::new(n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap();
    ReportOutput {
        name: name.to_string(),
        title: format!("{name}: a hand-built report"),
        partition_keys: keys.iter().map(|k| k.to_string()).collect(),
        schema,
        batches: vec![batch],
    }
}

fn ints(values: Vec<Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from(values))
}

fn floats(values: Vec<Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from(values))
}

fn texts(values: Vec<String>) -> ArrayRef {
    Arc::new(StringArray::from(values))
}

const NASTY: [&str; 3] = [
    "void gemm<\"tile\" & 'x'></title></text></svg><script>console.error('escaped badly')</script>(float*)",
    "<img src=x onerror=\"console.error('img')\">",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::BFloat16>, at::detail::Array<char*, 1>)",
];

/// 2 ranks x 2 devices x 2 streams, 50 bins of 100 µs each; bin i of lane l is (i * 7 + l * 13)
/// % 101 percent busy. Returns the output and the busy bins (pct > 0), counted here.
fn gpu_utilization() -> (ReportOutput, usize) {
    let (mut rank, mut device, mut stream, mut start, mut end, mut busy, mut pct) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut lane = 0i64;
    for r in 0..2 {
        for d in 0..2 {
            for s in [7, 13] {
                for i in 0..50i64 {
                    let p = ((i * 7 + lane * 13) % 101) as f64;
                    let t0 = 1_000_000_000 * r + i * 100_000;
                    rank.push(Some(r));
                    device.push(Some(d));
                    stream.push(Some(s));
                    start.push(Some(t0));
                    end.push(Some(t0 + 100_000));
                    busy.push(Some((p * 1000.0) as i64));
                    pct.push(Some(p));
                }
                lane += 1;
            }
        }
    }
    let busy_bins = pct.iter().filter(|p| p.unwrap() > 0.0).count();
    let out = output(
        "gpu_utilization",
        &["rank"],
        vec![
            column("rank", ints(rank)),
            column("device_id", ints(device)),
            column("stream_id", ints(stream)),
            column("bin_start_ns", ints(start)),
            column("bin_end_ns", ints(end)),
            column("busy_ns", ints(busy)),
            column("busy_pct", floats(pct)),
        ],
    );
    (out, busy_bins)
}

/// 20 kernels (the nasty names among them) on each of 2 ranks: the plot shows the top 15.
fn kernel_summary() -> ReportOutput {
    let mut names: Vec<String> = NASTY.iter().map(|s| s.to_string()).collect();
    names.extend((names.len()..20).map(|i| format!("kernel_{i}")));
    let (mut rank, mut name, mut total) = (vec![], vec![], vec![]);
    for r in 0..2 {
        for (i, n) in names.iter().enumerate() {
            rank.push(Some(r));
            name.push(n.clone());
            total.push(Some((20 - i as i64) * 1_500_000 + r * 1000));
        }
    }
    let rows = name.len();
    output(
        "kernel_summary",
        &["rank"],
        vec![
            column("rank", ints(rank)),
            column("name", texts(name)),
            column("instances", ints(vec![Some(10); rows])),
            column("total_ns", ints(total.clone())),
            column("time_pct", floats(vec![Some(5.0); rows])),
            column("avg_ns", ints(total.clone())),
            column("med_ns", ints(total.clone())),
            column("min_ns", ints(total.clone())),
            column("max_ns", ints(total)),
            column("stddev_ns", floats(vec![None; rows])),
        ],
    )
}

/// Launch delays in four log bins ([1, 2) µs, [2, 5) µs, [5, 10) µs, [100, 200) µs) and 4
/// launches without a GPU side.
fn launch_stats() -> ReportOutput {
    let mut delays = vec![];
    for (ns, n) in [(1_500, 10), (3_000, 20), (7_000, 5), (150_000, 1)] {
        delays.extend(std::iter::repeat_n(Some(ns), n));
    }
    delays.extend(std::iter::repeat_n(None, 4));
    let rows = delays.len();
    output(
        "launch_stats",
        &["rank"],
        vec![
            column(
                "rank",
                ints((0..rows as i64).map(|i| Some(i % 2)).collect()),
            ),
            column("correlation_id", ints((0..rows as i64).map(Some).collect())),
            column("cpu_duration_ns", ints(vec![Some(4_000); rows])),
            column("gpu_duration_ns", ints(vec![Some(20_000); rows])),
            column("launch_delay_ns", ints(delays)),
        ],
    )
}

/// Four (host, rank) partitions, each with idle, compute and non-compute time.
fn temporal_breakdown() -> ReportOutput {
    let parts = [
        ("h1", 0, [10, 70, 20]),
        ("h1", 1, [25, 50, 25]),
        ("h2", 2, [5, 90, 5]),
        ("h2", 3, [40, 30, 30]),
    ];
    let ns = |k: usize| ints(parts.iter().map(|p| Some(p.2[k] * 1_000_000)).collect());
    let pct = |k: usize| floats(parts.iter().map(|p| Some(p.2[k] as f64)).collect());
    output(
        "temporal_breakdown",
        &["host", "rank"],
        vec![
            column(
                "host",
                texts(parts.iter().map(|p| p.0.to_string()).collect()),
            ),
            column("rank", ints(parts.iter().map(|p| Some(p.1)).collect())),
            column("idle_ns", ns(0)),
            column("compute_ns", ns(1)),
            column("non_compute_ns", ns(2)),
            column("kernel_ns", ns(1)),
            column("idle_pct", pct(0)),
            column("compute_pct", pct(1)),
            column("non_compute_pct", pct(2)),
        ],
    )
}

/// Where the page and its screenshot stay after the test, for people to look at.
fn kept(file: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report_html");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(file)
}

fn png_size(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap_or_default();
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        path.display()
    );
    bytes.len()
}

#[test]
fn report_page_loads_cleanly_draws_every_plot_and_screenshots() {
    let Some(browser) = chromium("report_page_loads_cleanly_draws_every_plot_and_screenshots")
    else {
        return;
    };
    let (utilization, busy_bins) = gpu_utilization();
    let outputs = vec![
        utilization,
        kernel_summary(),
        launch_stats(),
        temporal_breakdown(),
    ];
    let html = tracesql::report::html::render(&outputs, "runs/<archive> & 'ranks'");
    let dir = tempfile::tempdir().unwrap();
    let page = kept("report.html");
    std::fs::write(&page, &html).unwrap();

    let (dom, stderr) = run(
        browser,
        &page,
        &["--enable-logging=stderr", "--v=0", "--dump-dom"],
    );
    let console = console_lines(&stderr);
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    // the markup in kernel names stayed text: the loaded DOM has no script or img element
    assert!(dom.contains("<svg"), "no svg in the DOM:\n{dom}");
    assert!(!dom.contains("<script") && !dom.contains("<img"));
    let expected = [
        ("gpu_utilization", busy_bins),
        ("kernel_summary", 15),
        ("launch_stats", 4),
        ("temporal_breakdown", 12),
    ];
    for (plot, want) in expected {
        assert_eq!(
            crate::support::plot_marks(&dom, plot),
            Some(want),
            "marks of {plot}"
        );
    }
    // every lane and bar is labelled, names shortened with the whole name as a tooltip
    assert_eq!(dom.matches("class=\"lane\"").count(), 8);
    assert!(dom.contains(">rank=1 · device 1 stream 13</text>"));
    assert!(dom.contains(">native::vectorized_elementwise_kernel&lt;…&gt;(…)</text>"));
    assert!(dom.contains("<title>void at::native::vectorized_elementwise_kernel&lt;4,"));
    assert!(dom.contains(">host=h2 rank=3</text>"));

    let shot = kept("report.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    run(browser, &page, &[&arg, "--window-size=1400,3000"]);
    // a page of the same size with nothing on it, for scale
    let blank_page = dir.path().join("blank.html");
    std::fs::write(&blank_page, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank = dir.path().join("blank.png");
    let arg = format!("--screenshot={}", blank.display());
    run(browser, &blank_page, &[&arg, "--window-size=1400,3000"]);
    let (size, blank_size) = (png_size(&shot), png_size(&blank));
    eprintln!(
        "report screenshot: {} ({size} bytes; a blank page: {blank_size} bytes)",
        shot.display()
    );
    assert!(
        size > 10 * blank_size,
        "{size} bytes against a blank {blank_size}"
    );
}
