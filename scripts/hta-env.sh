# Sourced by the scripts that compare with HTA: the HTA virtualenv (made once) in $venv, the
# one of TraceInsight, HTA's current release (same `hta` module), in $traceinsight_venv, and
# the tracesql binary in $TRACESQL_BIN (scripts/bench-build.sh: the bench profile unless given).
hta_venv() { # DIR PACKAGE: a virtualenv at DIR with PACKAGE, made once
    if [[ ! -x "$1/bin/python" ]] || ! "$1/bin/python" -c "import hta" 2>/dev/null; then
        echo "making the virtualenv $1 ($2)" >&2
        python3 -m venv "$1"
        "$1/bin/pip" install --quiet "$2"
    fi
}
venv="${TRACESQL_HTA_VENV:-$HOME/.cache/tracesql-hta-venv}"
hta_venv "$venv" HolisticTraceAnalysis==0.5.0
traceinsight_venv="${TRACESQL_TRACEINSIGHT_VENV:-$HOME/.cache/tracesql-traceinsight-venv}"
hta_venv "$traceinsight_venv" traceinsight==0.6.1
source "$(dirname "${BASH_SOURCE[0]}")/bench-build.sh" # $bin, the profile named on stderr
TRACESQL_BIN=$bin
