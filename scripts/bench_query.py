#!/usr/bin/env python3
"""Time tracesql and DuckDB on the same synthetic window, in one run, and print ratios.

Called by scripts/bench-query.sh (which builds the release binary and the venv).
tracesql is timed as a whole command (process start, catalog, query, output); DuckDB as a
query in an already-running process (its most favourable setting). Best of N runs each.
"""

import argparse
import os
import subprocess
import sys
import time

import duckdb

TOP_KERNELS = (
    "select name, count(*), sum(end_ns - start_ns) from kernel "
    "group by name order by 3 desc limit 20"
)


def best_of(n, fn):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def tracesql(binary, window, sql):
    def run():
        subprocess.run(
            [binary, "query", "--window", window, "--format", "csv", sql],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    window = os.path.join(args.out, f"synth-{args.kernels}")
    if not os.path.exists(os.path.join(window, "window_info.parquet")):
        # kernels are about 40% of synth events
        events = int(args.kernels / 0.4)
        t0 = time.perf_counter()
        subprocess.run(
            [args.bin, "synth", "--out", window, "--events", str(events), "--seed", "1"],
            check=True,
        )
        print(f"synth: {events} events in {time.perf_counter() - t0:.1f} s")
    con = duckdb.connect()
    kernel_file = os.path.join(window, "kernel.parquet")
    n_kernels = con.sql(f"select count(*) from read_parquet('{kernel_file}')").fetchall()[0][0]
    print(f"window: {window} ({n_kernels} kernels), best of {args.runs} runs")

    # first answer from a stored window (whole command)
    first = best_of(args.runs, tracesql(args.bin, window, "select count(*) from cuda_sync"))
    print(f"tracesql first answer (whole command):      {first * 1000:8.1f} ms")

    ours = best_of(args.runs, tracesql(args.bin, window, TOP_KERNELS))
    duck_sql = TOP_KERNELS.replace("from kernel", f"from read_parquet('{kernel_file}')")
    theirs = best_of(args.runs, lambda: con.sql(duck_sql).fetchall())
    print(f"top-kernels, tracesql (whole command):      {ours * 1000:8.1f} ms")
    print(f"top-kernels, duckdb {duckdb.__version__} (in-process query): {theirs * 1000:8.1f} ms")
    print(f"ratio tracesql / duckdb: {ours / theirs:.2f}  (goal <= 1.2)")


if __name__ == "__main__":
    sys.exit(main())
