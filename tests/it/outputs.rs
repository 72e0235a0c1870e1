//! What the commands write: a `.json.gz` is one gzip member; no command writes into its own
//! input; a write that fails (a full disk) is a one-line error naming the file, exit 1.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use tracesql::export::{export_chrome, ExportConfig};

fn tracesql(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tracesql"));
    command.args(args);
    command
}

fn run(args: &[&str]) -> Output {
    tracesql(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn synth(dir: &Path, events: u64) {
    tracesql::synth::write_window(&tracesql::synth::SynthConfig::new(events, 3), dir).unwrap();
}

async fn export(window: &Path, output: &Path) {
    export_chrome(&ExportConfig {
        window: window.to_path_buf(),
        output: output.to_path_buf(),
        trace_name: Some("t".into()),
        filter: Default::default(),
    })
    .await
    .unwrap();
}

/// A window large enough that its document is encoded in many parallel pieces gzips to one
/// member that a single-member reader (which stops after the first member, as older
/// Perfetto does) reads whole, equal to the plain export.
#[tokio::test(flavor = "multi_thread")]
async fn a_json_gz_is_one_gzip_member_holding_the_whole_document() {
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("w");
    synth(&window, 30_000);
    let (plain, gz) = (tmp.path().join("t.json"), tmp.path().join("t.json.gz"));
    export(&window, &plain).await;
    export(&window, &gz).await;
    let raw = std::fs::read(&gz).unwrap();
    let mut member = flate2::bufread::GzDecoder::new(&raw[..]);
    let mut text = Vec::new();
    member.read_to_end(&mut text).unwrap();
    assert!(
        member.into_inner().is_empty(),
        "bytes follow the first gzip member"
    );
    assert!(
        text == std::fs::read(&plain).unwrap(),
        "the member is not the document"
    );
    // Python's zlib, the reader the issue names, agrees where python3 is on the machine.
    let python = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zlib\n\
             d = zlib.decompressobj(wbits=31)\n\
             text = d.decompress(open(sys.argv[1], 'rb').read())\n\
             assert d.eof and not d.unused_data, 'not exactly one member'\n\
             print(len(text))",
        )
        .arg(&gz)
        .output();
    match python {
        Ok(out) if out.status.success() => {
            let length: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
            assert_eq!(length, text.len());
        }
        Ok(out) => panic!("python's zlib: {}", stderr(&out)),
        Err(e) => eprintln!("SKIPPED the python zlib check: no python3 ({e})"),
    }
}

/// A file of the window before and after a refused command: unchanged.
fn assert_refused(out: &Output, input_file: &Path, before: &[u8]) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let message = stderr(out);
    assert!(
        message.contains("choose an output outside it") && message.lines().count() == 1,
        "{message}"
    );
    assert!(
        std::fs::read(input_file).unwrap() == before,
        "{} changed",
        input_file.display()
    );
}

#[test]
fn export_convert_and_query_refuse_to_write_into_their_input() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("runs");
    let window = archive.join("window_id=000001");
    synth(&window, 2_000);
    let kernel = window.join("kernel.parquet");
    let before = std::fs::read(&kernel).unwrap();
    let w = window.to_str().unwrap();
    let through_dots = format!("{}/../window_id=000001/kernel.parquet", w);
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&window, &link).unwrap();
    let through_link = link.join("kernel.parquet");
    for output in [
        kernel.to_str().unwrap(),
        &through_dots,
        through_link.to_str().unwrap(),
    ] {
        assert_refused(&run(&["export", "-w", w, "-o", output]), &kernel, &before);
        assert_refused(
            &run(&["query", "-w", w, "-o", output, "select 1"]),
            &kernel,
            &before,
        );
    }
    assert_refused(
        &run(&["export", "-w", w, "-o", &format!("{w}/trace.pftrace")]),
        &kernel,
        &before,
    );
    let files_before = std::fs::read_dir(&window).unwrap().count();
    let split_inside = format!("{w}/trace.json");
    let out = run(&["export", "-w", w, "-o", &split_inside, "--max-size", "1MB"]);
    assert_refused(&out, &kernel, &before);
    assert_eq!(
        std::fs::read_dir(&window).unwrap().count(),
        files_before,
        "a split export left a file in its window"
    );
    let merged_inside = archive.join("merged.json");
    let a = archive.to_str().unwrap();
    let out = run(&["export", "-w", a, "-o", merged_inside.to_str().unwrap()]);
    assert_refused(&out, &kernel, &before);
    assert!(
        !merged_inside.exists(),
        "a merged export wrote into its archive"
    );
    let script = tmp.path().join("q.sql");
    std::fs::write(&script, "select 1").unwrap();
    let s = script.to_str().unwrap();
    let out = run(&["query", "-w", w, "-f", s, "-o", s]);
    assert_refused(&out, &script, b"select 1");
    let inside = archive.join("traces");
    let out = run(&[
        "convert",
        archive.to_str().unwrap(),
        "--output",
        inside.to_str().unwrap(),
    ]);
    assert_refused(&out, &kernel, &before);
    assert!(!inside.exists(), "convert made its output folder");
}

/// `command` run with files limited to `bytes` (writes past it fail with EFBIG, as on a
/// full disk; the signal that would kill the process is ignored).
fn with_file_size_limit(mut command: Command, bytes: u64) -> Output {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    command.output().unwrap()
}

fn assert_names_the_file(out: &Output, file: &Path) {
    let message = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(
        message.contains(&file.display().to_string()) && message.contains("too large"),
        "{message}"
    );
    assert!(!file.exists(), "{} was left half-written", file.display());
}

#[test]
fn a_failed_write_names_the_file_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let window = tmp.path().join("w");
    synth(&window, 20_000);
    let w = window.to_str().unwrap();
    for name in [
        "t.json",
        "t.json.gz",
        "t.pftrace",
        "rows.csv",
        "rows.parquet",
    ] {
        let output = tmp.path().join(name);
        let o = output.to_str().unwrap();
        let command = if name.starts_with("rows") {
            tracesql(&["query", "-w", w, "-o", o, "select * from kernel"])
        } else {
            tracesql(&["export", "-w", w, "-o", o])
        };
        assert_names_the_file(&with_file_size_limit(command, 16 << 10), &output);
    }
    let synth_dir = tmp.path().join("s");
    let out = with_file_size_limit(
        tracesql(&[
            "synth",
            "--out",
            synth_dir.to_str().unwrap(),
            "--events",
            "50000",
        ]),
        16 << 10,
    );
    let message = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{message}");
    assert!(
        message.contains(synth_dir.to_str().unwrap()) && message.contains("too large"),
        "{message}"
    );
}
