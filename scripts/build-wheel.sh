#!/usr/bin/env bash
# Build the Python package's wheel with the shipping profile (fat LTO, docs/building.md).
#   scripts/build-wheel.sh [OUT_DIR] [PROFILE]     (defaults: dist/, dist)
# Prints the build time and the wheel's size. Needs maturin (pip install maturin).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
profile="${2:-dist}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracesql-target}"
maturin="$(command -v maturin || true)"
if [ -z "$maturin" ]; then
    echo "build-wheel: needs maturin (pip install 'maturin>=1.9,<2')" >&2
    exit 1
fi
start=$(date +%s)
"$maturin" build --profile "$profile" -m python/Cargo.toml --out "$out"
wheel="$(ls -t "$out"/tracesql-*.whl | head -1)"
echo "build-wheel: $wheel ($(du -h "$wheel" | cut -f1)) with profile $profile in $(( $(date +%s) - start )) s"
