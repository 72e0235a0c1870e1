//! Older Nsight Systems reports (2.x schema with eventClass, e.g. Nsight Systems 2022.2) that
//! repeat CUDA calls as eventClass-67 "CUDA backtrace" rows: the plain name, the same thread
//! and correlation id, enclosing the call in time. Each call imports once, launches pair each
//! GPU op with one call, and a window that still holds such pairs (a report without
//! eventClass cannot tell them apart) is what `doctor`'s duplicate_correlation_id reports.

use std::path::Path;
use std::process::Command;

use crate::nsys_reports::{build, gpid, gtid, SCHEMA_2X};
use crate::support::{open, rows};

/// A 2.x report of one process: cudaMalloc (no GPU op), a kernel launch and a copy, each
/// recorded twice when `backtraces` (a versioned-name eventClass-0 row and an enclosing
/// plain-name eventClass-67 row, as Nsight Systems 2022.2 wrote them). `event_class`: whether
/// the runtime table has the eventClass column.
fn report(path: &Path, event_class: bool) {
    let (a, a1) = (gpid(7), gtid(7, 8));
    let schema = match event_class {
        true => format!(
            "{SCHEMA_2X}\nALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME ADD COLUMN eventClass INTEGER;"
        ),
        false => SCHEMA_2X.to_string(),
    };
    // (start, end, correlation id, name id, eventClass)
    let calls = [
        (100, 200, 1, 1, 0),
        (90, 210, 1, 2, 67),
        (300, 400, 2, 3, 0),
        (295, 405, 2, 4, 67),
        (500, 600, 3, 5, 0),
        (499, 601, 3, 6, 67),
    ];
    let runtime: Vec<String> = calls
        .iter()
        .map(|(s, e, corr, name, class)| match event_class {
            true => format!("({s}, {e}, {a1}, {corr}, {name}, 0, {class})"),
            false => format!("({s}, {e}, {a1}, {corr}, {name}, 0)"),
        })
        .collect();
    build(
        path,
        &schema,
        &format!(
            r#"
INSERT INTO StringIds VALUES (1, 'cudaMalloc_v3020'), (2, 'cudaMalloc'),
  (3, 'cudaLaunchKernel_v7000'), (4, 'cudaLaunchKernel'), (5, 'cudaMemcpy_v3020'),
  (6, 'cudaMemcpy'), (7, 'k');
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES {};
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ,
  blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory) VALUES
  (350, 450, 0, 1, 7, 2, {a}, 7, 7, 8, 1, 1, 1, 32, 1, 1, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId,
  correlationId, globalPid, bytes, copyKind, srcKind, dstKind) VALUES
  (550, 560, 0, 1, 7, 3, {a}, 8, 2, 3, 1);
"#,
            runtime.join(", ")
        ),
    );
}

fn tracesql(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(args)
        .output()
        .unwrap()
}

fn import(report: &Path, window: &Path) {
    let out = tracesql(&[
        "import",
        "nsys",
        report.to_str().unwrap(),
        "--output",
        window.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn backtrace_rows_of_an_old_report_are_not_second_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let (path, window) = (tmp.path().join("old.sqlite"), tmp.path().join("w"));
    report(&path, true);
    import(&path, &window);
    let ctx = open(&window).await;
    // one call per correlation id, the CUPTI row's (versioned name, its own times)
    assert_eq!(
        rows(
            &ctx,
            "SELECT correlation_id, name, ts, dur FROM api_call ORDER BY ts"
        )
        .await,
        [
            "1|cudaMalloc|100|100",
            "2|cudaLaunchKernel|300|100",
            "3|cudaMemcpy|500|100"
        ]
    );
    assert_eq!(
        rows(&ctx, "SELECT count(*) FROM launch").await,
        ["2"],
        "the kernel and the copy pair with one call each"
    );
    assert_eq!(
        duplicates(&window),
        (Some(0), 0),
        "doctor finds no duplicates"
    );
}

/// `tracesql doctor`'s exit code and the count of its duplicate_correlation_id check.
fn duplicates(window: &Path) -> (Option<i32>, u64) {
    let window = window.to_str().unwrap();
    let out = tracesql(&["doctor", "--window", window, "--format", "json"]);
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let duplicate = (checks.as_array().unwrap().iter())
        .find(|c| c["check"] == "duplicate_correlation_id")
        .expect("the duplicate_correlation_id check");
    (out.status.code(), duplicate["count"].as_u64().unwrap())
}

#[test]
fn doctor_reports_the_pairs_a_report_without_event_class_leaves() {
    // Without eventClass the backtrace rows cannot be told from calls: both are imported,
    // and doctor names the correlation ids they share (an error: exit 1).
    let tmp = tempfile::tempdir().unwrap();
    let (path, window) = (tmp.path().join("old.sqlite"), tmp.path().join("w"));
    report(&path, false);
    import(&path, &window);
    assert_eq!(duplicates(&window), (Some(1), 3));
}
