#!/usr/bin/env bash
# The Python package's tests: build the package with the dev profile (its Rust dependencies
# are the ones `cargo test` builds, in the same target directory), install the wheel with its
# test extras into a fresh virtualenv, run python/tests with pytest.
#   scripts/test-python.sh [PYTEST ARGS...]
# A fresh venv each run (under $TMPDIR, removed after): a run cannot depend on what an
# earlier one left; pip's download cache keeps it quick.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracesql-target}"

venv="$(mktemp -d -t tracesql-pytest.XXXXXX)"
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q "maturin>=1.9,<2"

start=$(date +%s)
"$venv/bin/maturin" build --quiet --profile dev -m python/Cargo.toml \
    --interpreter "$venv/bin/python" --out "$venv/wheels"
echo "test-python: wheel built (dev profile) in $(( $(date +%s) - start )) s"

wheel="$(ls "$venv"/wheels/tracesql-*.whl)"
"$venv/bin/pip" install -q "${wheel}[test]"
# From the tests' folder: `import tracesql` is the installed package, not ./python.
cd python/tests
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
