#!/usr/bin/env python3
"""Time tracesql and DuckDB on the same synthetic window, in one run, and print ratios.

Called by scripts/bench-query.sh (which builds the release binary and the venv).
tracesql is timed as a whole command (process start, catalog, query, output); DuckDB as a
query in an already-running process (its most favourable setting). Rounds are interleaved;
each figure is the median [min-max] of the rounds.

The window's GPU tables claim their rows in time order per stream (docs/engine.md, "Known
order"); a copy of them without the claim (same rows, same order) shows what the claim buys:
the column `unclaimed` is tracesql over that copy.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import duckdb
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
from query_suite import QUERIES  # noqa: E402

# Questions that order by time on a stream, beyond the suite's `gaps`.
ORDERED = {
    "gaps_lead": (
        "select device_id, stream_id, lead(start_ns) over "
        "(partition by device_id, stream_id order by start_ns) - end_ns as gap_ns "
        "from kernel order by gap_ns desc nulls last, device_id, stream_id limit 20"
    ),
    "stream_busy": (
        "select stream_id, sum(end_ns - greatest(start_ns, coalesce(prev_end, start_ns))) as busy "
        "from (select stream_id, start_ns, end_ns, max(end_ns) over (partition by stream_id "
        "order by start_ns, end_ns rows between unbounded preceding and 1 preceding) as prev_end "
        "from kernel) group by stream_id order by stream_id"
    ),
}
# Over tracesql's gpu_op view (kernels, copies, sets and graph nodes): no DuckDB column.
VIEW_ONLY = {
    "gpu_op_gaps": (
        "select kind, count(*), sum(ts - prev_end) from (select kind, ts, lag(ts + dur) over "
        "(partition by device_id, stream_id order by ts, dur) as prev_end from gpu_op) "
        "group by kind order by kind"
    ),
}
CLAIMED_TABLES = ("kernel", "gpu_memcpy", "gpu_memset", "graph_event_node", "graph_host_node")


def unclaimed_copy(window, out):
    """`window` with its GPU tables rewritten without the row order claim (rows as they are)."""
    if os.path.exists(os.path.join(out, "window_info.parquet")):
        return
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(window):
        src, dst = os.path.join(window, name), os.path.join(out, name)
        table = name.removesuffix(".parquet")
        if table in CLAIMED_TABLES:
            pq.write_table(pq.read_table(src), dst, compression="zstd", row_group_size=1 << 20)
        elif not os.path.exists(dst):
            os.symlink(os.path.abspath(src), dst)


def span(times):
    return f"{statistics.median(times) * 1000:7.1f} [{min(times) * 1000:.0f}-{max(times) * 1000:.0f}]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    window = os.path.join(args.out, f"synth-{args.kernels}")
    if not os.path.exists(os.path.join(window, "window_info.parquet")):
        # kernels are about 32% of synth events
        events = int(args.kernels / 0.32)
        t0 = time.perf_counter()
        subprocess.run(
            [args.bin, "synth", "--out", window, "--events", str(events), "--seed", "1"],
            check=True,
        )
        print(f"synth: {events} events in {time.perf_counter() - t0:.1f} s")
    plain = window + "-unclaimed"
    unclaimed_copy(window, plain)

    con = duckdb.connect()
    for table in ("kernel", "cuda_runtime", "gpu_memcpy"):
        con.sql(f"create view {table} as select * from read_parquet('{window}/{table}.parquet')")
    n_kernels = con.sql("select count(*) from kernel").fetchall()[0][0]
    print(f"window: {window} ({n_kernels} kernels); {args.rounds} interleaved rounds, ms")

    def command(w, sql):
        def run():
            subprocess.run([args.bin, "query", "--window", w, "--format", "csv", sql],
                           check=True, stdout=subprocess.DEVNULL)
        return run

    first = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        command(window, "select 1")()
        first.append(time.perf_counter() - t0)
    print(f"first answer (`tracesql query 'select 1'`, whole command): {span(first)}")

    engines = ("tracesql", "unclaimed", "duckdb")
    print(f"{'query':<12} {'tracesql (command)':>22} {'unclaimed (command)':>22} "
          f"{'duckdb ' + duckdb.__version__ + ' (in-process)':>28} {'vs duckdb':>10} {'claim buys':>10}")
    for name, sql in {**QUERIES, **ORDERED, **VIEW_ONLY}.items():
        runs = {"tracesql": command(window, sql), "unclaimed": command(plain, sql)}
        if name not in VIEW_ONLY:
            runs["duckdb"] = lambda sql=sql: con.sql(sql).arrow()
        for run in runs.values():
            run()  # warm: files in the page cache
        times = {e: [] for e in runs}
        for _ in range(args.rounds):
            for engine, run in runs.items():
                t0 = time.perf_counter()
                run()
                times[engine].append(time.perf_counter() - t0)
        med = {e: statistics.median(t) for e, t in times.items()}
        duck = f"{span(times['duckdb']):>28}" if "duckdb" in med else f"{'-':>28}"
        ratio = f"{med['tracesql'] / med['duckdb']:>9.2f}x" if "duckdb" in med else f"{'-':>10}"
        print(f"{name:<12} {span(times['tracesql']):>22} {span(times['unclaimed']):>22} {duck} "
              f"{ratio} {med['unclaimed'] / med['tracesql']:>9.2f}x")
    print(f"(engines: {', '.join(engines)}; vs duckdb = tracesql / duckdb, goal <= 1.0 "
          "+ the process start; claim buys = unclaimed / tracesql)")


if __name__ == "__main__":
    sys.exit(main())
