//! The Python window writer (python/tracesql_window) against the reference exporter: in a
//! virtualenv this test makes under the target dir, `pip install ./python` (with numpy and
//! pyarrow), the Python unit tests (python/tests: a broken window is a ValueError naming the
//! kind and column, and nothing is written), then for the seed's example window and
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

/// The venv's python with numpy, pyarrow and this checkout's ./python installed; None (said
/// loudly) when python3 is missing or PyPI cannot be reached for numpy and pyarrow.
fn writer_python() -> Option<PathBuf> {
    if Command::new("python3").arg("--version").output().is_err() {
        return skip("no python3");
    }
    let packages = ["numpy", "pyarrow", "setuptools", "wheel"];
    let imports = "numpy, pyarrow, setuptools, wheel";
    let python = match crate::venv::python_with("window-writer", &packages, imports) {
        Ok(python) => python,
        Err(why) => return skip(&format!("{why} (PyPI unreachable?)")),
    };
    let venv = python
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf();
    let has = |module: &str| {
        Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    // The checkout's package, every run, built offline with the venv's setuptools, from a
    // copy (setuptools leaves build/ and *.egg-info beside the sources).
    let copy = tempfile::tempdir().unwrap();
    let package = copy.path().join("python");
    copy_package(&root().join("python"), &package);
    let out = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "-q",
            "--no-deps",
            "--force-reinstall",
            "--no-build-isolation",
        ])
        .arg(&package)
        .output()
        .unwrap();
    assert!(out.status.success(), "pip install ./python: {}", text(&out));
    assert!(has("tracesql_window"), "installed but not importable");
    Some(python)
}

/// The package's sources (not tests, build output or caches) from `from` to `to`.
fn copy_package(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("tracesql_window")).unwrap();
    for file in ["pyproject.toml", "README.md"] {
        std::fs::copy(from.join(file), to.join(file)).unwrap();
    }
    for entry in std::fs::read_dir(from.join("tracesql_window")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") {
            std::fs::copy(
                &path,
                to.join("tracesql_window").join(path.file_name().unwrap()),
            )
            .unwrap();
        }
    }
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
    // Run from the scratch folder, so the installed package is imported, not ./python.
    let scratch = tempfile::tempdir().unwrap();
    let unit = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s"])
        .arg(root().join("python/tests"))
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(unit.status.success(), "python unit tests:\n{}", text(&unit));
    assert!(text(&unit).contains("OK"), "{}", text(&unit));

    let cases = Command::new(&python)
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
