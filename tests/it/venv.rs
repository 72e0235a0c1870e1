//! Python virtualenvs the tests share, made once under a lock: the first test to ask creates
//! the venv and installs its packages while the others wait on the lock, then all of them use
//! it. They live in `$TRACESQL_VENV_DIR` (`.ci/run` points it at a fresh folder every run, so
//! a race in the setup cannot hide behind a venv an earlier run left), else
//! `~/.cache/tracesql-venvs`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The folder the venvs live in.
fn venv_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("TRACESQL_VENV_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/tracesql-venvs")
}

/// The python of venv `name`, in which `import {imports}` works, after `pip install
/// {packages}` if it did not. Err (the reason, for a loud skip or a failure) when python3 is
/// missing or pip fails. Safe to call from any number of tests and processes at once: an
/// exclusive file lock makes one of them the creator.
pub(crate) fn python_with(name: &str, packages: &[&str], imports: &str) -> Result<PathBuf, String> {
    python_in(&venv_root(), name, packages, imports)
}

fn python_in(root: &Path, name: &str, packages: &[&str], imports: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let venv = root.join(name);
    let python = venv.join("bin/python");
    let ready = |python: &Path| {
        Command::new(python)
            .args(["-c", &format!("import {imports}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let lock_path = root.join(format!("{name}.lock"));
    let lock = File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("lock {}: {e}", lock_path.display()))?;
    if ready(&python) {
        return Ok(python);
    }
    // A venv a killed run left half made is made again from nothing.
    let _ = std::fs::remove_dir_all(&venv);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !made.status.success() {
        return Err(format!(
            "python3 -m venv {}: {}",
            venv.display(),
            String::from_utf8_lossy(&made.stderr).trim()
        ));
    }
    if packages.is_empty() {
        return Ok(python);
    }
    let pip = Command::new(venv.join("bin/pip"))
        .args(["install", "-q"])
        .args(packages)
        .output()
        .map_err(|e| format!("pip: {e}"))?;
    if !pip.status.success() {
        return Err(format!(
            "pip install {}: {}",
            packages.join(" "),
            String::from_utf8_lossy(&pip.stderr).trim()
        ));
    }
    match ready(&python) {
        true => Ok(python),
        false => Err(format!(
            "installed {packages:?}, but `import {imports}` fails"
        )),
    }
}

#[test]
fn tests_asking_at_once_all_get_the_one_working_venv() {
    // Eight threads ask for the same venv of a fresh folder at once; each must get a python
    // that works (unlocked, one thread's venv was half made or deleted under another's feet).
    let root = tempfile::tempdir().unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let root = root.path().to_path_buf();
            std::thread::spawn(move || python_in(&root, "race", &[], "sys, json"))
        })
        .collect();
    let pythons: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("\n*** SKIPPED the venv race test: no python3 ***\n");
        return;
    }
    let want = root.path().join("race/bin/python");
    for python in pythons {
        assert_eq!(python.expect("every caller gets the venv"), want);
    }
    let works = Command::new(&want)
        .args(["-c", "import sys, json"])
        .status()
        .unwrap();
    assert!(works.success());
}
