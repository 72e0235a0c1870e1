#!/usr/bin/env bash
# Compare our exports with the reference exporter (../shared/seed/oracle.py) for MINUTES
# minutes (default 30): the differential test of `cargo test` (tests/it/oracle_diff.rs, the
# fixed cases of tests/oracle/cases.txt, then fresh random windows until the time is up),
# run alone. Every window that differs is printed as a cases.txt line and appended to
# $TRACESQL_ORACLE_FAILED (default: $CARGO_TARGET_DIR/oracle-failures.txt); add each one to
# tests/oracle/cases.txt. Exits 1 if any window differed.
#
#   scripts/check-oracle.sh 30
#   TRACESQL_ORACLE_SEED=7 scripts/check-oracle.sh 5       # replay a run's fresh cases
#
# The debug profile (the one `cargo test` builds): the comparison, not the speed, matters.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
minutes=${1:-30}
target=${CARGO_TARGET_DIR:-$root/target}
export TRACESQL_ORACLE_SECONDS=$((minutes * 60))
export TRACESQL_ORACLE_FAILED=${TRACESQL_ORACLE_FAILED:-$target/oracle-failures.txt}

cd "$root"
started=$(date +%s)
cargo test --quiet --test it oracle_diff::random_windows -- --nocapture
echo "check-oracle: $(( ($(date +%s) - started) / 60 )) min, no window differed"
