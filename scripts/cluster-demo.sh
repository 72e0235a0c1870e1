#!/usr/bin/env bash
# A loopback cluster: a scheduler and two executors as processes on 127.0.0.1, queries and a
# convert over a synthetic archive compared with local runs (answers and wall times), then
# executors killed (kill -9) during a long query, printing what the user sees: Ballista's
# rerun of the lost work when the survivor has a free task slot, else the scheduler's
# one-line error once no task has run for cluster::serve::STALL_SECONDS. Everything it
# starts is stopped on exit.
#
#   scripts/cluster-demo.sh [WINDOWS] [EVENTS_PER_WINDOW]   (default 16 50000)
#   KEEP=1 keeps the work folder (logs: scheduler.log, executor*.log; TRACESQL_LOG=info)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/tracesql-target}"
windows="${1:-16}"
events="${2:-50000}"

# The test build builds the binary with the features `cargo test` resolves (see README).
cargo test --no-run --quiet
bin="$CARGO_TARGET_DIR/debug/tracesql"

work="$(mktemp -d)"
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${KEEP:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap stop EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

archive="$work/archive"
half=$(( (windows + 1) / 2 ))
for i in $(seq 1 "$windows"); do
  rank=$(( (i - 1) / half ))
  "$bin" synth --out "$archive/rank=$rank/window_id=$(printf %06d "$i")" \
    --events "$events" --seed "$i" --window-id "$i" 2>/dev/null
done
echo "archive: $windows windows x $events events under $archive"

log="${TRACESQL_LOG:-info}"
sport=$(free_port)
TRACESQL_LOG="$log" "$bin" cluster scheduler --bind "127.0.0.1:$sport" 2>"$work/scheduler.log" &
pids+=($!)
executors=()
# start_executor N TASKS: executor N, TASKS at a time; its pid joins executors[].
start_executor() {
  local fport gport
  fport=$(free_port)
  gport=$(free_port)
  TRACESQL_LOG="$log" "$bin" cluster executor --scheduler "127.0.0.1:$sport" --bind "127.0.0.1:$fport" \
    --grpc-port "$gport" --concurrent-tasks "$2" --work-dir "$work/executor$1" \
    2>"$work/executor$1.log" &
  pids+=($!)
  executors+=($!)
}
start_executor 1 2
start_executor 2 2
cluster="df://127.0.0.1:$sport"
# Ready once a query runs (the executors register within a second or two).
for _ in $(seq 1 60); do
  "$bin" query --cluster "$cluster" -w "$archive" "select 1" >/dev/null 2>&1 && break
  sleep 0.5
done
echo "cluster: scheduler $cluster, executors ${executors[*]} (2 tasks at a time each)"

now() { date +%s.%N; }
same=0
differ=0
compare() {
  local sql="$1" t0 t1 t2 local_out remote_out
  t0=$(now)
  local_out=$("$bin" query -w "$archive" --format csv "$sql")
  t1=$(now)
  remote_out=$("$bin" query --cluster "$cluster" -w "$archive" --format csv "$sql")
  t2=$(now)
  if [ "$local_out" = "$remote_out" ]; then verdict=same; same=$((same + 1)); else verdict=DIFFERENT; differ=$((differ + 1)); fi
  printf '%-9s local %6.2f s  cluster %6.2f s  %s\n' "$verdict" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$sql"
}
echo
echo "queries (wall time of the whole command, local vs. cluster):"
compare "select 1"
compare "select rank, window_id, count(*), sum(end_ns - start_ns) from kernel group by 1, 2 order by 1, 2"
compare "select count(*) from kernel where window_id = 3"
compare "select rank, count(*), sum(dur), avg(launch_latency) from launch group by 1 order by 1"
compare "select kind, count(*), sum(dur) from gpu_op where rank = 1 group by 1 order by 1"
compare "select rank, window_id, ph, count(*) from cpu_event group by 1, 2, 3 order by 1, 2, 3"
compare "select name, count(*), sum(end_ns - start_ns) from kernel group by 1 order by 3 desc, 1 limit 5"
echo "$same same, $differ different"

echo
echo "convert (chrome), local -j 2 vs. cluster:"
t0=$(now)
"$bin" convert "$archive" --output "$work/traces-local" -j 2 --quiet
t1=$(now)
"$bin" convert "$archive" --output "$work/traces-cluster" --cluster "$cluster" --quiet
t2=$(now)
printf 'local %.2f s, cluster %.2f s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
python3 - "$work/traces-local" "$work/traces-cluster" <<'EOF'
import gzip, json, pathlib, sys
a, b = map(pathlib.Path, sys.argv[1:])
files = sorted(p.relative_to(a) for p in a.rglob("*.json.gz"))
def load(p):
    t = json.loads(gzip.open(p).read())
    t.pop("traceName", None)
    return t
same = sum(load(a / f) == load(b / f) for f in files)
print(f"{same} of {len(files)} traces the same (parsed, traceName aside)")
EOF

long="select count(*) from kernel a join kernel b on a.rank = b.rank and a.window_id = b.window_id and a.name = b.name and a.correlation_id % 10 = b.correlation_id % 10"
want=$("$bin" query -w "$archive" --format csv "$long" | tail -1)

# Ballista's adaptive planner (tracesql turns it off) strands a job that loses an executor.
printf 'set ballista.planner.adaptive.enabled = true;\n%s;\n' "$long" >"$work/adaptive.sql"
printf '%s;\n' "$long" >"$work/static.sql"

# kill_during_long_query VICTIM [SCRIPT]: run the long query (static.sql), kill -9 VICTIM 4 s
# in, say what the user saw.
kill_during_long_query() {
  local t0 status answer
  t0=$(now)
  set +e
  timeout 300 "$bin" query --cluster "$cluster" -w "$archive" --format csv \
    -f "$work/${2:-static}.sql" >"$work/long.out" 2>"$work/long.err" &
  local query=$!
  sleep 4
  { kill -9 "$1"; wait "$1"; } 2>/dev/null
  echo "  killed executor $1 (kill -9) at 4 s"
  wait "$query"
  status=$?
  set -e
  answer=$(tail -1 "$work/long.out")
  printf '  the query ended after %.1f s with exit status %d%s\n' "$(echo "$(now) - $t0" | bc)" \
    "$status" "$([ "$status" = 124 ] && echo ' (timeout: no answer within 300 s)')"
  if [ "$status" = 0 ]; then
    echo "  answer: $answer ($([ "$answer" = "$want" ] && echo 'the local answer' || echo "DIFFERENT from the local $want"))"
  else
    echo "  what the user sees on stderr: $(cut -c1-400 "$work/long.err" | tr '\n' ' ')"
  fi
}

echo
echo "an executor killed during a long query (the other has 2 task slots):"
kill_during_long_query "${executors[0]}"

echo
echo "the last executor killed, a new one with a single task slot left:"
start_executor 3 1
sleep 6
kill_during_long_query "${executors[1]}"

echo
echo "Ballista's adaptive planner re-enabled (SET in the script), two fresh executors, one killed:"
{ kill "${executors[2]}"; wait "${executors[2]}"; } 2>/dev/null
start_executor 4 2
start_executor 5 2
sleep 25  # executor 3 counted lost
kill_during_long_query "${executors[3]}" adaptive
grep -h "gave up on the job\|heartbeat timed out\|Roll back\|Reset [0-9]* tasks" "$work/scheduler.log" \
  | sed 's/^/  scheduler: /' | cut -c1-200 || true
