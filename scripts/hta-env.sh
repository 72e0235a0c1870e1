# Sourced by the scripts that compare with HTA: the HTA virtualenv (made once) in $venv, and the
# tracesql binary in $TRACESQL_BIN (scripts/bench-build.sh: the bench profile unless given).
venv="${TRACESQL_HTA_VENV:-$HOME/.cache/tracesql-hta-venv}"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
    echo "making the HTA virtualenv in $venv (HolisticTraceAnalysis==0.5.0)" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet HolisticTraceAnalysis==0.5.0
fi
source "$(dirname "${BASH_SOURCE[0]}")/bench-build.sh" # $bin, the profile named on stderr
TRACESQL_BIN=$bin
