//! A mutator for every importer's input (Kineto JSON, plain and gzipped; nsys SQLite; nsys
//! parquetdir), each case run through the `tracesql import` binary in a child process with a
//! time limit. An outcome is one of: a window every table and view of which reads; a
//! one-line `error:` with exit 1 and nothing left behind; or a failure of the importer:
//! a panic or signal, exit 2 (an internal error: no input should cause one, so it counts as a
//! crash even on one line), an error of several lines, output left behind by a failed import,
//! a window that does not read, or a hang (over a minute of CPU time, or ten of wall time).
//!
//! The bounded test runs a few cases of each form in seconds; `scripts/fuzz-import.sh
//! MINUTES` runs the ignored test below for as long as asked, with the same mutator.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::nsys_reports::{build, to_parquetdir, two_processes, SCHEMA_3X};
use crate::support::run_with_cpu_limit;

/// xorshift64: every run with one seed mutates the same bytes.
pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Kineto,
    NsysSqlite,
    NsysParquetdir,
}

/// The unmutated inputs, made once per run.
pub struct Seeds {
    kineto: Vec<Vec<u8>>,
    sqlite: Vec<PathBuf>,
}

impl Seeds {
    pub fn make(dir: &Path) -> Seeds {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let kineto = [
            "kineto/pytorch_kineto__before_fix_trace.json",
            "kineto/facebookresearch_HolisticTraceAnalysis__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
            "kineto/facebookresearch_HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz",
        ]
        .iter()
        .map(|p| tracesql::file::read_gunzipped(&fixtures.join(p)).unwrap())
        .collect();
        let built = dir.join("seed-two-processes.sqlite");
        build(&built, SCHEMA_3X, &two_processes());
        let sqlite = vec![
            built,
            fixtures.join("nsys/hpcgroup_pipit__perlmutter-cloverleaf-cuda.sqlite"),
        ];
        Seeds { kineto, sqlite }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, bytes).unwrap();
    gz.finish().unwrap()
}

/// Byte-level damage: flips, a truncation, a chunk repeated or removed.
fn damage_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        return;
    }
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(bytes.len());
                bytes[at] ^= 1 << rng.below(8);
            }
        }
        1 => bytes.truncate(rng.below(bytes.len())),
        2 => {
            let at = rng.below(bytes.len());
            let len = rng.below(64).min(bytes.len() - at);
            let chunk = bytes[at..at + len].to_vec();
            let to = rng.below(bytes.len());
            bytes.splice(to..to, chunk);
        }
        _ => {
            let at = rng.below(bytes.len());
            let len = rng.below(256).min(bytes.len() - at);
            bytes.drain(at..at + len);
        }
    }
}

/// A value of a surprising type or size.
fn odd_value(rng: &mut Rng) -> Value {
    let nested = (0..1 + rng.below(200)).fold(Value::from(1), |v, _| Value::Array(vec![v]));
    let options = [
        Value::Null,
        Value::from(-1),
        Value::from(0),
        Value::from(i64::MAX),
        Value::from(i64::MIN),
        Value::from(u64::MAX),
        Value::from(1e300),
        Value::from(-0.5),
        Value::from(4294967295u64),
        Value::from(""),
        Value::from("12.5"),
        Value::from("ü\u{0}\u{fffd}"),
        Value::from(true),
        serde_json::json!([1, 2, 3]),
        serde_json::json!({"a": {"b": []}}),
        nested,
    ];
    options[rng.below(options.len())].clone()
}

/// JSON-level damage to a Kineto trace: fields of random events (or of the document) set to
/// odd values or removed, events duplicated or dropped.
fn damage_kineto(rng: &mut Rng, doc: &mut Value) {
    let Some(top) = doc.as_object_mut() else {
        return;
    };
    if rng.chance(6) {
        let keys: Vec<String> = top.keys().cloned().collect();
        let key = keys[rng.below(keys.len())].clone();
        if rng.chance(2) {
            top.remove(&key);
        } else {
            top.insert(key, odd_value(rng));
        }
        return;
    }
    let Some(events) = top.get_mut("traceEvents").and_then(Value::as_array_mut) else {
        return;
    };
    if events.is_empty() {
        return;
    }
    for _ in 0..1 + rng.below(6) {
        let i = rng.below(events.len());
        match rng.below(6) {
            0 => {
                let e = events[i].clone();
                events.insert(rng.below(events.len()), e);
            }
            1 => {
                events.remove(i);
                if events.is_empty() {
                    return;
                }
            }
            2 => events[i] = odd_value(rng),
            _ => {
                let Some(event) = events[i].as_object_mut() else {
                    continue;
                };
                let keys = ["ph", "ts", "dur", "pid", "tid", "name", "cat", "args", "id"];
                let key = keys[rng.below(keys.len())];
                if key == "args" && rng.chance(2) {
                    let args = event.entry("args").or_insert_with(|| serde_json::json!({}));
                    if let Some(args) = args.as_object_mut() {
                        let keys = [
                            "External id",
                            "correlation",
                            "stream",
                            "device",
                            "grid",
                            "block",
                            "bytes",
                            "cbid",
                            "context",
                        ];
                        args.insert(keys[rng.below(keys.len())].into(), odd_value(rng));
                    }
                } else if rng.chance(3) {
                    event.remove(key);
                } else {
                    event.insert(key.into(), odd_value(rng));
                }
            }
        }
    }
}

fn kineto_case(rng: &mut Rng, seeds: &Seeds, dir: &Path) -> PathBuf {
    let mut bytes = seeds.kineto[rng.below(seeds.kineto.len())].clone();
    if rng.chance(3) {
        damage_bytes(rng, &mut bytes);
    } else if let Ok(mut doc) = serde_json::from_slice::<Value>(&bytes) {
        damage_kineto(rng, &mut doc);
        bytes = serde_json::to_vec(&doc).unwrap();
    }
    let gz = rng.chance(2);
    if gz {
        bytes = gzip(&bytes);
        if rng.chance(8) {
            damage_bytes(rng, &mut bytes); // damage under the compression
        }
    }
    let path = dir.join(if gz { "trace.json.gz" } else { "trace.json" });
    std::fs::write(&path, bytes).unwrap();
    path
}

/// SQL damage to a report: a table dropped, a column dropped, cells set to values of other
/// storage classes, rows deleted or duplicated.
fn damage_sqlite(rng: &mut Rng, path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for _ in 0..1 + rng.below(3) {
        let table = &tables[rng.below(tables.len())];
        let cols: Vec<String> = conn
            .prepare(&format!("PRAGMA table_info(\"{table}\")"))
            .unwrap()
            .query_map([], |r| r.get(1))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        if cols.is_empty() {
            continue;
        }
        let col = &cols[rng.below(cols.len())];
        let values = [
            "NULL",
            "-1",
            "0",
            "9223372036854775807",
            "-9223372036854775808",
            "1e308",
            "0.5",
            "'soon'",
            "''",
            "x'00ff80'",
            "4294967295",
        ];
        let value = values[rng.below(values.len())];
        let statement = match rng.below(8) {
            0 => format!("DROP TABLE \"{table}\""),
            1 => format!("ALTER TABLE \"{table}\" DROP COLUMN \"{col}\""),
            2 => format!("DELETE FROM \"{table}\" WHERE rowid % 2 = 0"),
            3 => format!("INSERT INTO \"{table}\" SELECT * FROM \"{table}\" LIMIT 3"),
            4 => format!("UPDATE \"{table}\" SET \"{col}\" = {value}"),
            _ => format!(
                "UPDATE \"{table}\" SET \"{col}\" = {value} WHERE rowid % {} = 0",
                2 + rng.below(5)
            ),
        };
        // a statement SQLite refuses (dropping a key column) leaves the report as it was
        let _ = conn.execute_batch(&statement);
    }
}

fn sqlite_case(rng: &mut Rng, seeds: &Seeds, dir: &Path) -> PathBuf {
    // the small built report mostly; the real one (slower) one time in eight
    let seed = &seeds.sqlite[usize::from(rng.chance(8))];
    let path = dir.join("report.sqlite");
    std::fs::copy(seed, &path).unwrap();
    if rng.chance(3) {
        let mut bytes = std::fs::read(&path).unwrap();
        damage_bytes(rng, &mut bytes);
        std::fs::write(&path, bytes).unwrap();
    } else {
        damage_sqlite(rng, &path);
    }
    path
}

fn parquetdir_case(rng: &mut Rng, seeds: &Seeds, dir: &Path) -> PathBuf {
    let sqlite = dir.join("source.sqlite");
    std::fs::copy(&seeds.sqlite[0], &sqlite).unwrap();
    if rng.chance(2) {
        damage_sqlite(rng, &sqlite);
    }
    let out = dir.join("report_pqdir");
    to_parquetdir(&sqlite, &out);
    std::fs::remove_file(&sqlite).unwrap();
    if rng.chance(2) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let file = &files[rng.below(files.len())];
        if rng.chance(4) {
            std::fs::remove_file(file).unwrap();
        } else {
            let mut bytes = std::fs::read(file).unwrap();
            damage_bytes(rng, &mut bytes);
            std::fs::write(file, bytes).unwrap();
        }
    }
    out
}

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Window,
    OneLineError,
    /// A failure of the importer, described.
    Crash(String),
    Hang,
}

const HANG: Duration = Duration::from_secs(60);

/// The binary under test: $TRACESQL_FUZZ_BIN (the long run's stable copy, which a rebuild
/// during the run does not replace), else the one cargo built for these tests.
fn binary() -> PathBuf {
    std::env::var_os("TRACESQL_FUZZ_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_tracesql")),
        PathBuf::from,
    )
}

/// Import `input` (of `form`) into `dir/out` with the binary and judge the outcome.
pub fn judge(form: Form, input: &Path, dir: &Path) -> Outcome {
    let output = dir.join("out");
    let mut cmd = Command::new(binary());
    cmd.arg("import")
        .arg(if form == Form::Kineto {
            "kineto"
        } else {
            "nsys"
        })
        .arg(input)
        .arg("--output")
        .arg(&output);
    let Some((code, stderr)) = run_with_cpu_limit(cmd, HANG) else {
        return Outcome::Hang;
    };
    let first = |s: &str| s.lines().next().unwrap_or("").to_string();
    let leftovers = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("out"));
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    match code {
        Some(0) => {
            let sql = "SELECT (SELECT count(*) FROM kernel) + (SELECT count(*) FROM gpu_memcpy) \
                 + (SELECT count(*) FROM gpu_memset) + (SELECT count(*) FROM cuda_runtime) \
                 + (SELECT count(*) FROM cuda_driver) + (SELECT count(*) FROM cuda_sync) \
                 + (SELECT count(*) FROM overhead) + (SELECT count(*) FROM cpu_event) \
                 + (SELECT count(*) FROM launch) + (SELECT count(*) FROM api_call) \
                 + (SELECT count(*) FROM gpu_op) + (SELECT count(*) FROM user_annotation)";
            let mut query = Command::new(binary());
            query
                .args(["query", "--format", "csv", "--window"])
                .arg(&output)
                .arg(sql);
            match run_with_cpu_limit(query, HANG) {
                None => Outcome::Hang,
                Some((Some(0), _)) => Outcome::Window,
                Some((code, err)) => Outcome::Crash(format!(
                    "imported window does not read ({code:?}): {}",
                    first(&err)
                )),
            }
        }
        Some(1) if errors.len() == 1 && errors[0].starts_with("error: ") && !leftovers => {
            Outcome::OneLineError
        }
        Some(1) if leftovers => Outcome::Crash(format!("output left behind: {}", first(&stderr))),
        Some(1) => Outcome::Crash(format!(
            "error of {} lines: {}",
            errors.len(),
            first(&stderr)
        )),
        Some(2) => Outcome::Crash(format!("internal error (exit 2): {}", first(&stderr))),
        Some(c) => Outcome::Crash(format!("exit {c}: {}", stderr.trim().replace('\n', " / "))),
        None => Outcome::Crash(format!("killed by a signal: {}", first(&stderr))),
    }
}

/// Counts over a run.
#[derive(Default, Debug)]
pub struct Tally {
    pub cases: u64,
    pub windows: u64,
    pub errors: u64,
    pub hangs: u64,
    pub crashes: Vec<String>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.cases += other.cases;
        self.windows += other.windows;
        self.errors += other.errors;
        self.hangs += other.hangs;
        self.crashes.extend(other.crashes);
    }
}

/// One mutated case of `form` in a fresh folder under `scratch`, judged; a failing input is
/// kept in `keep` when given.
fn one_case(
    form: Form,
    rng: &mut Rng,
    seeds: &Seeds,
    scratch: &Path,
    keep: Option<&Path>,
    tally: &mut Tally,
) {
    let dir = tempfile::tempdir_in(scratch).unwrap();
    let input = match form {
        Form::Kineto => kineto_case(rng, seeds, dir.path()),
        Form::NsysSqlite => sqlite_case(rng, seeds, dir.path()),
        Form::NsysParquetdir => parquetdir_case(rng, seeds, dir.path()),
    };
    tally.cases += 1;
    match judge(form, &input, dir.path()) {
        Outcome::Window => tally.windows += 1,
        Outcome::OneLineError => tally.errors += 1,
        bad => {
            let what = format!("{form:?} case {}: {bad:?}", tally.cases);
            if let Some(keep) = keep {
                let to = keep.join(format!("{form:?}-{}", rng.next()));
                std::fs::create_dir_all(&to).unwrap();
                let name = input.file_name().unwrap();
                if input.is_dir() {
                    crate::support::copy_dir(&input, &to.join(name));
                } else {
                    std::fs::copy(&input, to.join(name)).unwrap();
                }
                std::fs::write(to.join("outcome.txt"), &what).unwrap();
            }
            if bad == Outcome::Hang {
                tally.hangs += 1;
            } else {
                tally.crashes.push(what);
            }
        }
    }
}

/// Run the mutator on `threads` threads until `cases_per_thread` cases or `until`.
pub fn campaign(
    seed: u64,
    threads: usize,
    cases_per_thread: u64,
    until: Instant,
    keep: Option<&Path>,
) -> Tally {
    let scratch = tempfile::tempdir().unwrap();
    let seeds = Seeds::make(scratch.path());
    let forms = [
        Form::Kineto,
        Form::Kineto,
        Form::NsysSqlite,
        Form::NsysParquetdir,
    ];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (seeds, scratch) = (&seeds, scratch.path());
                s.spawn(move || {
                    let mut rng = Rng(seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t as u64 + 1)));
                    let mut tally = Tally::default();
                    for i in 0..cases_per_thread {
                        if Instant::now() >= until {
                            break;
                        }
                        let form = forms[(i as usize + t) % forms.len()];
                        one_case(form, &mut rng, seeds, scratch, keep, &mut tally);
                    }
                    tally
                })
            })
            .collect();
        let mut total = Tally::default();
        for h in handles {
            total.add(h.join().unwrap());
        }
        total
    })
}

#[test]
fn mutated_inputs_of_every_importer_end_in_a_window_or_a_one_line_error() {
    // 2 x 8 cases: 4 Kineto (plain or gzipped), 2 SQLite, 2 parquetdir per thread
    let tally = campaign(7, 2, 8, Instant::now() + Duration::from_secs(60), None);
    assert!(tally.crashes.is_empty(), "{:#?}", tally.crashes);
    assert_eq!(tally.hangs, 0);
    assert_eq!(tally.cases, 16, "{tally:?}");
    assert!(tally.errors > 0, "no mutation was ever noticed: {tally:?}");
}

#[test]
fn the_judge_tells_a_window_an_error_and_a_crash_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let good = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto/pytorch_kineto__before_fix_trace.json");
    assert_eq!(judge(Form::Kineto, &good, tmp.path()), Outcome::Window);
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("t.json");
    std::fs::write(&bad, b"{\"traceEvents\": [").unwrap();
    assert_eq!(judge(Form::Kineto, &bad, tmp.path()), Outcome::OneLineError);
    // an output that exists already: refused on one line, but an "out" is there, so the
    // judge would call a leftover a crash; the importer must not have written it
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("out")).unwrap();
    std::fs::write(tmp.path().join("out/x"), b"").unwrap();
    assert!(matches!(
        judge(Form::Kineto, &good, tmp.path()),
        Outcome::Crash(_)
    ));
}

/// `scripts/fuzz-import.sh MINUTES`: TRACESQL_FUZZ_MINUTES (default 1), TRACESQL_FUZZ_SEED,
/// TRACESQL_FUZZ_THREADS (default: the cores), TRACESQL_FUZZ_KEEP (a folder for failing inputs).
#[test]
#[ignore = "long: scripts/fuzz-import.sh MINUTES"]
fn fuzz_import_for_minutes() {
    let var = |name: &str| std::env::var(name).ok();
    let minutes: f64 = var("TRACESQL_FUZZ_MINUTES").map_or(1.0, |m| m.parse().unwrap());
    let seed: u64 = var("TRACESQL_FUZZ_SEED").map_or(1, |s| s.parse().unwrap());
    let threads: usize = var("TRACESQL_FUZZ_THREADS").map_or_else(
        || std::thread::available_parallelism().map_or(2, |n| n.get()),
        |t| t.parse().unwrap(),
    );
    let keep = var("TRACESQL_FUZZ_KEEP").map(PathBuf::from);
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(minutes * 60.0);
    let tally = campaign(seed, threads, u64::MAX, until, keep.as_deref());
    println!(
        "fuzz-import: {:.1} min, seed {seed}, {threads} threads: {} cases, {} valid windows, \
         {} one-line errors, {} crashes, {} hangs",
        started.elapsed().as_secs_f64() / 60.0,
        tally.cases,
        tally.windows,
        tally.errors,
        tally.crashes.len(),
        tally.hangs
    );
    for crash in &tally.crashes {
        println!("crash: {crash}");
    }
    assert!(tally.crashes.is_empty() && tally.hangs == 0);
}
