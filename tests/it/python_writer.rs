//! The Python window writer (python/tracesql_window, pure Python) against the reference
//! exporter: in a virtualenv with numpy and pyarrow, the writer's unit tests
//! (python/tests/test_writer.py: a broken window is a ValueError naming the kind and column,
//! and nothing is written), then for the seed's example window and
//! synth-like windows built in Python (tests/python/writer_cases.py) the oracle's export of
//! the in-memory window equals `tracesql export` of the folder `write_window` wrote, compared
//! as parsed JSON. Without python3, the seed or PyPI it says SKIPPED loudly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::export::{differences, read_json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn skip(why: &str) -> Option<PathBuf> {
    eprintln!("\n*** SKIPPED the Python window writer test: {why} ***\n");
    None
}

/// The venv's python with numpy and pyarrow; None (said loudly) when python3 is missing or
/// PyPI cannot be reached. The writer is pure Python: the tests import it from the checkout
/// (`PYTHONPATH=python`), so this test needs no build of the package's compiled engine.
fn writer_python() -> Option<PathBuf> {
    if Command::new("python3").arg("--version").output().is_err() {
        return skip("no python3");
    }
    match crate::venv::python_with("window-writer", &["numpy", "pyarrow"], "numpy, pyarrow") {
        Ok(python) => Some(python),
        Err(why) => skip(&format!("{why} (PyPI unreachable?)")),
    }
}

/// `python` with the checkout's window writer importable and no bytecode left in it.
fn python_command(python: &Path) -> Command {
    let mut command = Command::new(python);
    command
        .env("PYTHONPATH", root().join("python"))
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

#[test]
fn the_python_writer_gives_windows_that_export_as_the_reference_does() {
    let seed = root().join("../shared/seed");
    if !seed.join("oracle.py").exists() {
        skip(&format!("no oracle at {}", seed.display()));
        return;
    }
    let Some(python) = writer_python() else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let unit = python_command(&python)
        .args(["-m", "unittest", "discover", "-p", "test_writer.py", "-s"])
        .arg(root().join("python/tests"))
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(unit.status.success(), "python unit tests:\n{}", text(&unit));
    assert!(text(&unit).contains("OK"), "{}", text(&unit));

    let cases = python_command(&python)
        .arg(root().join("tests/python/writer_cases.py"))
        .arg(&seed)
        .arg(scratch.path())
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(cases.status.success(), "writer_cases.py: {}", text(&cases));
    let names: Vec<String> = String::from_utf8(cases.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 4, "cases: {names:?}");

    let mut failures = Vec::new();
    for name in &names {
        let case = |suffix: &str| scratch.path().join(format!("{name}{suffix}"));
        let oracle = Command::new(&python)
            .arg(seed.join("oracle.py"))
            .arg("--window")
            .arg(case(".window.json"))
            .arg("--cpu-trace")
            .arg(case(".cpu.json"))
            .arg("--out")
            .arg(case(".reference.json"))
            .args(["--trace-name", name])
            .output()
            .unwrap();
        assert!(oracle.status.success(), "{name}: oracle: {}", text(&oracle));
        let window = scratch.path().join(name).join("window_id=000001");
        let ours = Command::new(env!("CARGO_BIN_EXE_tracesql"))
            .arg("export")
            .arg("--window")
            .arg(&window)
            .arg("--output")
            .arg(case(".ours.json"))
            .args(["--trace-name", name])
            .output()
            .unwrap();
        assert!(
            ours.status.success(),
            "{name}: tracesql export: {}",
            text(&ours)
        );
        let reference = read_json(&case(".reference.json"));
        let events = reference["traceEvents"].as_array().unwrap().len();
        assert!(events > 50, "{name}: only {events} reference events");
        let diffs = differences(&read_json(&case(".ours.json")), &reference);
        if !diffs.is_empty() {
            failures.push(format!(
                "{name}: {} differences, first: {}",
                diffs.len(),
                diffs[..diffs.len().min(3)].join(" | ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
