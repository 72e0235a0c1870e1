#!/usr/bin/env python3
"""Time tracesql and DuckDB on the same synthetic window, in one run, and print ratios.

Called by scripts/bench-query.sh (which builds the release binary and the venv).
tracesql is timed as a whole command (process start, catalog, query, output); DuckDB as a
query in an already-running process (its most favourable setting), its result read whole into
an Arrow table (DuckDB 2's `.arrow()` is a lazy reader: it timed the sort of `filter`, not
the rows). Rounds are interleaved;
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
# Questions of time containment and overlap (docs/engine.md, "Interval joins"), over the
# kernels, the runtime calls and the CPU trace's ranges (`ranges`: its ProfilerStep#, user
# annotations and CPU ops with the CUPTI thread that ran them, written once to Parquet so both
# engines read the same file).
CONTAINMENT = {
    "step_gpu": (
        "select s.name, count(*) as kernels, sum(k.end_ns - k.start_ns) as gpu_ns "
        "from ranges s join kernel k on k.start_ns >= s.ts and k.start_ns < s.end_ts "
        "where s.cat = 'user_annotation' and s.name like 'ProfilerStep#%' "
        "group by s.name order by gpu_ns desc, s.name limit 20"
    ),
    "annotation_gpu": (
        "select a.name, count(*) as kernels, sum(k.end_ns - k.start_ns) as gpu_ns "
        "from ranges a join cuda_runtime r on r.process_id = a.process_id "
        "and r.thread_id = a.thread_id and r.start_ns >= a.ts and r.start_ns <= a.end_ts "
        "join kernel k on k.correlation_id = r.correlation_id "
        "where a.cat = 'user_annotation' and a.name not like 'ProfilerStep#%' "
        "group by a.name order by gpu_ns desc, a.name"
    ),
    "comm_overlap": (
        "with comm as (select device_id, start_ns, end_ns from kernel where name like 'nccl%'), "
        "comp as (select device_id, start_ns, end_ns from kernel where name not like 'nccl%') "
        "select c.device_id, count(*) as pairs, "
        "sum(least(c.end_ns, k.end_ns) - greatest(c.start_ns, k.start_ns)) as overlap_ns "
        "from comm c join comp k on k.device_id = c.device_id "
        "and k.start_ns < c.end_ns and c.start_ns < k.end_ns group by c.device_id order by 1"
    ),
    "top_ops": (
        "select o.name, count(*) as kernels, sum(k.end_ns - k.start_ns) as gpu_ns "
        "from ranges o join cuda_runtime r on r.process_id = o.process_id "
        "and r.thread_id = o.thread_id and r.start_ns >= o.ts and r.start_ns <= o.end_ts "
        "join kernel k on k.correlation_id = r.correlation_id "
        "where o.cat = 'cpu_op' group by o.name order by gpu_ns desc, o.name limit 20"
    ),
}
# The ranges of the CPU trace, as `ranges` of CONTAINMENT, written by tracesql.
RANGES = (
    "with os_thread as (select distinct a.process_id, a.thread_id, t.resource_id as tid "
    "from api_call a join thread_resource t on t.process_id = a.process_id "
    "and t.thread_id = a.thread_id_i32) "
    "select e.cat, e.name, o.process_id, o.thread_id, e.ts_ns as ts, e.ts_ns + e.dur_ns as end_ts "
    "from cpu_event e join os_thread o on o.process_id = try_cast(e.pid as bigint) "
    "and o.tid = try_cast(e.tid as bigint) "
    "where e.ph = 'X' and e.cat in ('user_annotation', 'cpu_op') and e.dur_ns >= 0"
)
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


def interleaved(runs, rounds):
    """Each engine's times (s) over `rounds` rounds, one run of each per round, after a warm
    run of each (files in the page cache)."""
    for run in runs.values():
        run()
    times = {e: [] for e in runs}
    for _ in range(rounds):
        for engine, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[engine].append(time.perf_counter() - t0)
    return times


def span(times):
    """Median [min-max] in ms; the range to 0.1 ms below 100 ms, where a whole ms would round
    the minimum above the median."""
    ms = [t * 1000 for t in times]
    d = 1 if statistics.median(ms) < 100 else 0
    return f"{statistics.median(ms):7.1f} [{min(ms):.{d}f}-{max(ms):.{d}f}]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kernels", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parts", default="suite,containment",
                    help="which tables to print: suite (with the ordered questions), containment")
    ap.add_argument("--baseline", help="another tracesql binary (e.g. a build without the "
                    "interval join), timed on every question as a command")
    ap.add_argument("--scale", action="store_true",
                    help="run on KERNELS and on 10x KERNELS, and print what 10x the rows costs")
    ap.add_argument("--no-duckdb", dest="duckdb", action="store_false",
                    help="leave DuckDB out (its containment joins take minutes a round at 1 M kernels)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [args.kernels, args.kernels * 10] if args.scale else [args.kernels]
    medians = [bench_size(args, kernels) for kernels in sizes]
    if args.scale:
        print_scaling(sizes, medians)


def print_scaling(sizes, medians):
    """What 10x the rows costs, for each question and each of our columns."""
    small, large = medians
    print(f"scaling: {sizes[0]} -> {sizes[1]} kernels (median ms; goal: 10x the rows "
          "costs <= 11x the time)")
    print(f"{'question':<22} {'engine':<11} {'small':>9} {'large':>10} {'ratio':>7}")
    for (name, engine), t in small.items():
        if (name, engine) in large:
            ratio = large[(name, engine)] / t
            flag = "" if ratio <= 11 else "  over"
            print(f"{name:<22} {engine:<11} {t * 1000:9.1f} {large[(name, engine)] * 1000:10.1f} "
                  f"{ratio:6.2f}x{flag}")


def bench_size(args, kernels):
    """Every part asked for, over a synth window of `kernels` kernels; our engines' medians
    (s) by (question, engine)."""
    window = os.path.join(args.out, f"synth-{kernels}-steps")
    if not os.path.exists(os.path.join(window, "window_info.parquet")):
        # kernels are about 32% of synth events
        events = int(kernels / 0.32)
        t0 = time.perf_counter()
        subprocess.run(
            [args.bin, "synth", "--out", window, "--events", str(events), "--seed", "1",
             "--steps"],
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

    def command(w, sql, binary=args.bin):
        def run():
            subprocess.run([binary, "query", "--window", w, "--format", "csv", sql],
                           check=True, stdout=subprocess.DEVNULL)
        return run

    first = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        command(window, "select 1")()
        first.append(time.perf_counter() - t0)
    print(f"first answer (`tracesql query 'select 1'`, whole command): {span(first)}")

    medians = {}
    if "suite" in args.parts:
        medians.update(suite(args, window, plain, con, command))
    if "containment" in args.parts:
        medians.update(containment(args, window, con, command))
    return medians


def suite(args, window, plain, con, command):
    """The query suite and the ORDERED questions: as a command, over the window and over its
    unclaimed copy (and, with --baseline, another build's command); DuckDB in-process."""
    medians = {}
    baseline = f" {'baseline (command)':>22} {'vs baseline':>11}" if args.baseline else ""
    print(f"{'query':<12} {'tracesql (command)':>22} {'unclaimed (command)':>22} "
          f"{'duckdb ' + duckdb.__version__ + ' (in-process)':>28} {'vs duckdb':>10} "
          f"{'claim buys':>10}{baseline}")
    for name, sql in {**QUERIES, **ORDERED, **VIEW_ONLY}.items():
        runs = {"tracesql": command(window, sql), "unclaimed": command(plain, sql)}
        if args.baseline:
            runs["baseline"] = command(window, sql, args.baseline)
        if name not in VIEW_ONLY and args.duckdb:
            runs["duckdb"] = lambda sql=sql: con.sql(sql).to_arrow_table()
        times = interleaved(runs, args.rounds)
        med = {e: statistics.median(t) for e, t in times.items()}
        duck = f"{span(times['duckdb']):>28}" if "duckdb" in med else f"{'-':>28}"
        ratio = f"{med['tracesql'] / med['duckdb']:>9.2f}x" if "duckdb" in med else f"{'-':>10}"
        before = (f" {span(times['baseline']):>22} {med['tracesql'] / med['baseline']:>10.2f}x"
                  if args.baseline else "")
        print(f"{name:<12} {span(times['tracesql']):>22} {span(times['unclaimed']):>22} {duck} "
              f"{ratio} {med['unclaimed'] / med['tracesql']:>9.2f}x{before}")
        medians[(name, "tracesql")] = med["tracesql"]
    print("(vs duckdb = tracesql / duckdb, goal <= 1.0 + the process start; claim buys = "
          "unclaimed / tracesql; vs baseline = tracesql / baseline)")
    return medians


def containment(args, window, con, command):
    """The CONTAINMENT questions: tracesql as a command, in-process (when the `tracesql`
    module is installed) and, with --baseline, another build as a command; DuckDB in-process."""
    ranges = window + "-ranges.parquet"
    if not os.path.exists(ranges):
        subprocess.run([args.bin, "query", "--window", window, "--format", "parquet", "-o",
                        ranges, RANGES], check=True, stdout=subprocess.DEVNULL)
    con.sql(f"create or replace view ranges as select * from read_parquet('{ranges}')")
    external = f"create external table ranges stored as parquet location '{ranges}'; "
    runs = {"tracesql": lambda sql: command(window, external + sql)}
    try:
        import tracesql

        session = tracesql.open(window)
        session.sql(external.rstrip("; ")).to_arrow()
        runs["in-process"] = lambda sql: (lambda: session.sql(sql).to_arrow())
    except ImportError:
        print("(no `tracesql` module in this Python: no in-process column; "
              "scripts/bench-python.sh builds and installs it)")
    if args.baseline:
        runs["baseline"] = lambda sql: command(window, external + sql, args.baseline)
    if args.duckdb:
        runs["duckdb"] = lambda sql: (lambda: con.sql(sql).to_arrow_table())
    ours = [e for e in ("tracesql", "in-process") if e in runs]
    versus = ours if args.duckdb else []
    print(f"{'containment':<15} " + " ".join(f"{e:>22}" for e in runs)
          + "".join(f" {e + ' / duckdb':>22}" for e in versus))
    medians = {}
    for name, sql in CONTAINMENT.items():
        times = interleaved({e: make(sql) for e, make in runs.items()}, args.rounds)
        med = {e: statistics.median(t) for e, t in times.items()}
        print(f"{name:<15} " + " ".join(f"{span(t):>22}" for t in times.values())
              + "".join(f" {med[e] / med['duckdb']:>21.2f}x" for e in versus))
        medians.update({(name, e): med[e] for e in ours})
    print("(tracesql and baseline: whole commands; in-process and duckdb: queries in this "
          "process; goal: in-process <= 1.0x, the command <= 1.0x + the process start)")
    return medians


if __name__ == "__main__":
    sys.exit(main())
