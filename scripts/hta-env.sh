# Sourced by the scripts that compare with HTA: the HTA virtualenv (made once) in $venv, and the
# tracesql binary in $TRACESQL_BIN (a release build unless given).
venv="${TRACESQL_HTA_VENV:-$HOME/.cache/tracesql-hta-venv}"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
    echo "making the HTA virtualenv in $venv (HolisticTraceAnalysis==0.5.0)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet HolisticTraceAnalysis==0.5.0
fi
if [[ -z "${TRACESQL_BIN:-}" ]]; then
    export CARGO_TARGET_DIR="${TRACESQL_RELEASE_TARGET:-$HOME/.cache/tracesql-target-release}"
    cargo build --release --quiet
    TRACESQL_BIN="$CARGO_TARGET_DIR/release/tracesql"
fi
