//! `tracesql shell`: piped scripts (statements, dot-commands, errors and exit codes, output
//! fitting, files) and typed sessions under a pseudo-terminal (completion, Ctrl-C, history).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::*;

/// `tracesql shell -w W [extra]` with `script` on standard input.
fn shell(window: &Path, extra: &[&str], script: &str, scratch: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["shell", "-w", window.to_str().unwrap()])
        .args(extra)
        .current_dir(scratch)
        .env("TRACESQL_CACHE_DIR", scratch)
        .env("TRACESQL_HISTORY", scratch.join("history"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn a_piped_script_runs_statements_and_dot_commands_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\n\
         select count(*) as n from kernel;\n\
         create view eager as select * from kernel where graph_id = 0;\n\
         select count(*) as n from eager; select 'two' as per_line;\n",
        tmp.path(),
    );
    assert_eq!(ok(&out), "n\n4\nn\n2\nper_line\ntwo\n");
}

#[test]
fn statements_span_lines_and_the_last_needs_no_semicolon() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\nselect\n  count(*) -- kernels; not the end\n  as n\nfrom kernel\n;\n\nselect 5 as five",
        tmp.path(),
    );
    assert_eq!(ok(&out), "n\n4\nfive\n5\n");
}

#[test]
fn a_piped_error_is_one_line_naming_its_line_and_stops_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\nselect 1 as a;\nselect no_such_column from kernel;\nselect 2 as b;\n",
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "a\n1\n");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: <stdin>:3: ") && stderr.contains("no_such_column"),
        "{stderr}"
    );
}

#[test]
fn keep_going_runs_the_rest_and_still_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &["--keep-going"],
        ".mode csv\n.mode xml\nselect no_such_column from kernel;\nselect 2 as b;\n",
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "b\n2\n");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(stderr.contains("<stdin>:2: unknown mode `xml`"), "{stderr}");
}

#[test]
fn the_table_fits_maxwidth_and_stops_at_maxrows_saying_how_many_were_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".maxrows 2\n.maxwidth 40\nselect name, correlation_id from kernel order by start_ns;\n",
        tmp.path(),
    );
    let stdout = ok(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    let (table, footer) = lines.split_at(lines.len() - 1);
    assert!(table.iter().all(|l| l.chars().count() == 40), "{stdout}");
    assert!(stdout.contains("| void add_kernel<fl… | 101 "), "{stdout}");
    // header, two rows, three rules
    assert_eq!(table.len(), 6, "{stdout}");
    assert_eq!(footer, ["(2 more rows not shown; 4 in all)"]);
}

#[test]
fn line_mode_shows_one_value_a_line_uncut() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode line\n.maxwidth 20\nselect name, correlation_id from kernel order by start_ns limit 1;\n",
        tmp.path(),
    );
    assert_eq!(
        ok(&out),
        "          name = void add_kernel<float>(float*, float const*, int)\n\
         correlation_id = 101\n"
    );
}

#[test]
fn output_sends_results_uncut_to_a_file_and_output_alone_back_to_the_screen() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\n.maxrows 1\n.output out.csv\nselect correlation_id from kernel order by 1;\n\
         .output\nselect 2 as b;\n",
        tmp.path(),
    );
    assert_eq!(ok(&out), "b\n2\n");
    // A file is never cut, whatever .maxrows says.
    let file = std::fs::read_to_string(tmp.path().join("out.csv")).unwrap();
    assert_eq!(file.lines().count(), 5, "{file}");
}

#[test]
fn a_script_that_fails_leaves_no_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".output out.csv\nselect 1;\nselect nope;\n",
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("out.csv") || n.starts_with(".tracesql-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn tables_and_schema_list_names_kinds_and_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(&tiny_window(), &[], ".tables\n.schema kernel\n", tmp.path());
    let stdout = ok(&out);
    let is = |name: &str, kind: &str| {
        stdout.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words == [name, kind]
        })
    };
    assert!(is("kernel", "table"), "{stdout}");
    assert!(is("launch", "view"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "kernel"), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("correlation_id ") && l.starts_with("    ")),
        "{stdout}"
    );
}

#[test]
fn schema_of_an_unknown_table_is_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(&tiny_window(), &[], ".schema nope\n", tmp.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("`nope`"), "{stderr}");
}

#[test]
fn read_runs_a_file_and_its_errors_name_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("q.sql"),
        "select 1 as a;\nselect bad_col from kernel;\nselect 3 as c;\n",
    )
    .unwrap();
    let out = shell(&tiny_window(), &[], ".mode csv\n.read q.sql\n", tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "a\n1\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("error: q.sql:2: ") && stderr.contains("bad_col"),
        "{stderr}"
    );
}

#[test]
fn open_switches_to_another_window_or_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("runs");
    copy_dir(&tiny_window(), &archive.join("window_id=000001"));
    copy_dir(&tiny_window(), &archive.join("window_id=000002"));
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\nselect count(*) as n from kernel;\n.open runs\nselect count(*) as n from kernel;\n",
        tmp.path(),
    );
    assert_eq!(ok(&out), "n\n4\nn\n8\n");
}

#[test]
fn export_writes_the_current_window_filtered_by_where() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".export all.json.gz\n.export add.json.gz --where name like '%add_kernel%'\n",
        tmp.path(),
    );
    ok(&out);
    let kernels = |file: &str, name: &str| {
        let json = tracesql::file::read_gunzipped(&tmp.path().join(file)).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"].as_str().is_some_and(|n| n.contains(name)))
            .count()
    };
    assert!(kernels("all.json.gz", "mul_kernel") > 0);
    assert!(kernels("add.json.gz", "add_kernel") > 0);
    assert_eq!(kernels("add.json.gz", "mul_kernel"), 0);
}

#[test]
fn timer_prints_each_statements_rows_and_time() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\n.timer on\nselect 1 as a;\n.timer off\nselect 2 as b;\n",
        tmp.path(),
    );
    ok(&out);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("1 row in ") && stderr.trim_end().ends_with(" s"),
        "{stderr}"
    );
}

#[test]
fn help_has_a_line_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(&tiny_window(), &[], ".help\n", tmp.path());
    let stdout = ok(&out);
    for command in [
        ".tables",
        ".schema",
        ".mode",
        ".maxrows",
        ".maxwidth",
        ".timer",
        ".read",
        ".output",
        ".open",
        ".export",
        ".doctor",
        ".report",
        ".quit",
    ] {
        let lines = stdout
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(command))
            .count();
        assert_eq!(lines, 1, "{command}: {stdout}");
    }
}

#[test]
fn quit_ends_the_script_there() {
    let tmp = tempfile::tempdir().unwrap();
    let out = shell(
        &tiny_window(),
        &[],
        ".mode csv\nselect 1 as a;\n.quit\nselect 2 as b;\n",
        tmp.path(),
    );
    assert_eq!(ok(&out), "a\n1\n");
}

#[test]
fn a_closed_stdout_ends_the_script_quietly() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["shell", "-w", tiny_window().to_str().unwrap()])
        .env("TRACESQL_CACHE_DIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b".mode csv\nselect * from generate_series(1, 3000000);\nselect 1;\n")
        .unwrap();
    drop(stdin);
    let mut first = [0u8; 8];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // stdout is dropped here: the reader went away, as with `| head -1`.
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn query_max_width_fits_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let out = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["query", "-w", w.to_str().unwrap(), "--max-width", "30"])
        .arg("select name, correlation_id from kernel")
        .env("TRACESQL_CACHE_DIR", tmp.path())
        .output()
        .unwrap();
    let stdout = ok(&out);
    assert!(stdout.lines().all(|l| l.chars().count() == 30), "{stdout}");
    assert!(stdout.contains("| void add_ke… | 101 "), "{stdout}");
}

mod pty {
    //! Typed sessions: the shell under a pseudo-terminal, driven by rexpect.

    use std::path::Path;
    use std::process::Command;

    use rexpect::session::{spawn_command, PtySession};

    use crate::support::tiny_window;

    fn session(history: &Path, scratch: &Path) -> PtySession {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tracesql"));
        cmd.args(["shell", "-w", tiny_window().to_str().unwrap()])
            .current_dir(scratch)
            .env("TERM", "xterm")
            .env("COLUMNS", "100")
            .env("TRACESQL_CACHE_DIR", scratch)
            .env("TRACESQL_HISTORY", history);
        let mut p = spawn_command(cmd, Some(60_000)).unwrap();
        p.exp_string("tracesql> ").unwrap();
        p
    }

    #[test]
    fn tab_completes_a_table_name() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = session(&tmp.path().join("history"), tmp.path());
        p.send("select count(*) as kernels from kern").unwrap();
        p.send("\t").unwrap();
        p.send(";\r").unwrap();
        p.flush().unwrap();
        // `kern` alone is no table: 4 is the count only once `kernel` was completed.
        let (_, row) = p.exp_regex(r"\| 4 +\|").unwrap();
        assert!(row.starts_with("| 4"));
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
    }

    #[test]
    fn ctrl_c_cancels_a_long_query_and_the_shell_answers_after() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = session(&tmp.path().join("history"), tmp.path());
        p.send("select count(*) from generate_series(1, 1000000000000);\r")
            .unwrap();
        p.flush().unwrap();
        // Past a second, the running time shows.
        p.exp_string("running ").unwrap();
        p.send_control('c').unwrap();
        p.exp_string("cancelled").unwrap();
        p.exp_string("tracesql> ").unwrap();
        p.send("select 6 * 7 as answer;\r").unwrap();
        p.flush().unwrap();
        p.exp_regex(r"\| 42 +\|").unwrap();
        p.send_line(".quit").unwrap();
        p.exp_eof().unwrap();
    }

    #[test]
    fn history_survives_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let history = tmp.path().join("data/history");
        let mut p = session(&history, tmp.path());
        p.send("select 40 + 2 as answer;\r").unwrap();
        p.flush().unwrap();
        p.exp_regex(r"\| 42 +\|").unwrap();
        p.exp_string("tracesql> ").unwrap();
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
        let saved = std::fs::read_to_string(&history).unwrap();
        assert!(saved.contains("select 40 + 2 as answer;"), "{saved}");

        // A new shell: Up brings the statement back, Enter runs it.
        let mut p = session(&history, tmp.path());
        p.send("\x1b[A").unwrap();
        p.send("\r").unwrap();
        p.flush().unwrap();
        p.exp_regex(r"\| 42 +\|").unwrap();
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
    }
}

#[test]
fn dot_doctor_prints_the_table_of_tracesql_doctor_and_leaves_the_checks_as_views() {
    let scratch = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let out = shell(
        &w,
        &[],
        ".doctor\n.mode csv\nselect cut_ns from stream_overlap;\n",
        scratch.path(),
    );
    let got = ok(&out);
    let doctor = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args(["doctor", "-w", w.to_str().unwrap()])
        .output()
        .unwrap();
    let table = text(&doctor.stdout);
    assert!(table.contains("stream_overlap"), "{table}");
    assert_eq!(got, format!("{table}cut_ns\n100\n"));
}

#[test]
fn dot_report_prints_what_tracesql_report_prints() {
    let scratch = tempfile::tempdir().unwrap();
    let w = tiny_window();
    let out = shell(
        &w,
        &[],
        ".mode csv\n.report gpu_gaps min_gap_ns=1\n",
        scratch.path(),
    );
    let got = ok(&out);
    let report = Command::new(env!("CARGO_BIN_EXE_tracesql"))
        .args([
            "report",
            "gpu_gaps",
            "--param",
            "min_gap_ns=1",
            "--format",
            "csv",
            "-w",
        ])
        .arg(&w)
        .output()
        .unwrap();
    assert!(report.status.success());
    let expected = text(&report.stdout);
    assert!(expected.lines().count() > 1, "{expected}");
    assert_eq!(got, expected);
    let out = shell(&w, &[], ".report nope\n", scratch.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no report named"),
        "{}",
        text(&out.stderr)
    );
}
