//! The CPU op a diff gives each launch: the op whose external id the call carries, else (older
//! Kineto traces, whose calls carry an external id of their own) the op its thread started
//! last before the call, while that op still runs. Only the calls of the second kind are
//! matched against their thread's ops, so a run with both kinds must name the same ops as a
//! run whose every call names its op.

use crate::diff::{diff_rows, trace, Change};
use crate::support::import_trace;

#[tokio::test]
async fn a_call_whose_external_id_names_no_op_takes_its_threads_op() {
    let by_id = trace(Change::default());
    let mut older = by_id.clone();
    let mut renamed = 0;
    for event in older["traceEvents"].as_array_mut().unwrap() {
        // every other call, and its GPU op: an external id that no CPU op has
        let correlation = event["args"]["correlation"].as_i64();
        if event["cat"] != "cpu_op" && correlation.is_some_and(|c| c % 2 == 0) {
            event["args"]["External id"] = (correlation.unwrap() + 1_000_000).into();
            renamed += 1;
        }
    }
    assert!(renamed > 0);
    let tmp = tempfile::tempdir().unwrap();
    let base = import_trace(&by_id, tmp.path(), "by_id");
    let new = import_trace(&older, tmp.path(), "older");
    // half of NEW's 24 calls name no op by their external id
    let uncovered = diff_rows(
        &base,
        &new,
        "SELECT run, count(*) FROM api_call a LEFT ANTI JOIN _diff_call_op i \
         ON i.correlation_id = a.correlation_id AND i.run = a.run GROUP BY run",
    )
    .await;
    assert_eq!(uncovered, ["new|12"]);
    let ops = diff_rows(
        &base,
        &new,
        "SELECT run, step, kind, kernel, nth, cpu_op FROM _diff_gpu_work \
         ORDER BY run, step, kind, kernel, nth",
    )
    .await;
    let of_run = |run: &str| -> Vec<String> {
        (ops.iter())
            .filter_map(|row| row.strip_prefix(&format!("{run}|")).map(str::to_string))
            .collect()
    };
    let (by_id, by_thread) = (of_run("base"), of_run("new"));
    assert_eq!(by_id.len(), 8 * 3, "{ops:?}");
    assert!(
        by_id.iter().all(|op| !op.ends_with("(no CPU op)")),
        "{by_id:?}"
    );
    assert_eq!(by_thread, by_id);
}
