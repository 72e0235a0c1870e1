#!/usr/bin/env bash
# Mutate importer inputs for MINUTES minutes (default 30): Kineto traces (plain and gzipped),
# nsys SQLite reports and parquetdir exports, each case imported by the tracesql binary in a
# child process with a time limit (tests/it/import_fuzz.rs, the mutator of the bounded
# `cargo test` case). Prints the counts of cases, valid windows, one-line errors, crashes
# (panics, signals, exit 2, errors of several lines, output left behind, windows that do not
# read) and hangs (over a minute of CPU time, or ten minutes of wall time: a loaded machine
# starves a nice 19 run without hanging it); exits 1 if there was any crash or hang.
#
#   scripts/fuzz-import.sh 30                       # at nice 19, on every core
#   TRACESQL_FUZZ_SEED=7 TRACESQL_FUZZ_THREADS=1 TRACESQL_FUZZ_KEEP=/tmp/finds scripts/fuzz-import.sh 5
#
# Failing inputs are copied to $TRACESQL_FUZZ_KEEP (default: target/fuzz-import-finds). The
# debug build is fuzzed: integer overflow panics there, so an overflow counts as a crash.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
minutes=${1:-30}
target=${CARGO_TARGET_DIR:-$root/target}
export TRACESQL_FUZZ_MINUTES=$minutes
export TRACESQL_FUZZ_KEEP=${TRACESQL_FUZZ_KEEP:-$target/fuzz-import-finds}
mkdir -p "$TRACESQL_FUZZ_KEEP"

cd "$root"
cargo test --quiet --test it --no-run
# a copy of the binary: a rebuild while the run goes on must not swap it mid-case
mkdir -p "$target/fuzz-import-bin"
cp "$target/debug/tracesql" "$target/fuzz-import-bin/tracesql"
export TRACESQL_FUZZ_BIN=$target/fuzz-import-bin/tracesql
exec nice -n 19 cargo test --quiet --test it import_fuzz::fuzz_import_for_minutes -- \
  --ignored --nocapture --test-threads 1
