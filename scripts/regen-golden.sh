#!/usr/bin/env bash
# Recreate tests/golden/*.json.gz: the reference exporter's output (the oracle in
# ../shared/seed, or $SEED_DIR) for every case of tests/golden/cases.txt, and
# tests/golden/*.pftrace-ir.json.gz: the content its .pftrace encoder is handed (the
# oracle's SEED_PFTRACE_IR dump, with the pinned arch sm_90, process id 4242, name python). Synthetic windows
# are made with `tracesql synth` (deterministic: the test makes the same ones again).
# Needs Python >= 3.10; numpy and pyarrow come from $ORACLE_PYTHON, else the venv of
# seed/venv_bootstrap.py (~/.cache/tracesql-oracle-venv, created on first use).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seed=${SEED_DIR:-$root/../shared/seed}
venv=${SEED_VENV:-$HOME/.cache/tracesql-oracle-venv}
if [[ -n "${ORACLE_PYTHON:-}" ]]; then
  python=$ORACLE_PYTHON
elif [[ -x "$venv/bin/python" ]]; then
  python=$venv/bin/python
else
  python=python3 # oracle.py re-runs itself in a fresh venv_bootstrap venv
fi
golden=$root/tests/golden
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --quiet --manifest-path "$root/Cargo.toml"
target=${CARGO_TARGET_DIR:-$root/target}
tracesql=$target/debug/tracesql

while read -r name seed_no events without; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if [[ "$seed_no" == fixture ]]; then
    window=$root/tests/fixtures/${name}_window
  else
    window=$work/$name
    args=(synth --out "$window" --events "$events" --seed "$seed_no")
    [[ "$without" != - ]] && args+=(--without "$without")
    "$tracesql" "${args[@]}" 2>/dev/null
  fi
  "$python" "$seed/oracle.py" --window-dir "$window" --out "$work/$name.json" --trace-name "$name"
  gzip -9 -n -c "$work/$name.json" >"$golden/$name.json.gz"
  SEED_PFTRACE_IR="$work/$name.ir.json" "$python" "$seed/oracle.py" --window-dir "$window" \
    --out "$work/$name.pftrace"
  gzip -9 -n -c "$work/$name.ir.json" >"$golden/$name.pftrace-ir.json.gz"
  echo "$name: $(wc -c <"$golden/$name.json.gz") + $(wc -c <"$golden/$name.pftrace-ir.json.gz") bytes"
done <"$golden/cases.txt"
