"""tracesql from Python against its peers, in one run (called by scripts/bench-python.sh).

1. The query suite (python/tests/query_suite.py) over one synthetic window's Parquet files:
   tracesql's `to_arrow()` against DuckDB's `.to_arrow_table()` and datafusion-python's
   `to_arrow_table()`, each engine's session made once, rounds interleaved; median and range.
2. The hand-off: peak RSS growth of a 4 M-row result taken to pyarrow, over its Arrow size.
3. HTA's analyses, both sides in one Python process (imports done first): HTA's
   TraceAnalysis load + temporal, idle and kernel breakdown + launch stats, against
   `tracesql.import_kineto` + the same four reports.

    python bench_python.py WORK_DIR DATA_DIR [--events N] [--rounds R] [--hta-python PY]
                           [--parts queries,handoff,hta]
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import datafusion
import duckdb
import pyarrow as pa

import tracesql

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python", "tests"))
from query_suite import QUERIES, TABLES  # noqa: E402


def span(times):
    return f"{statistics.median(times) * 1000:8.1f} [{min(times) * 1000:.1f}-{max(times) * 1000:.1f}]"


def query_suite(window, rounds):
    ours = tracesql.open(window)
    duck = duckdb.connect()
    df = datafusion.SessionContext()
    for table in TABLES:
        path = os.path.join(window, table + ".parquet")
        duck.sql(f"create view {table} as select * from read_parquet('{path}')")
        df.register_parquet(table, path)
    engines = {
        "tracesql": lambda q: ours.sql(q).to_arrow(),
        "duckdb": lambda q: duck.sql(q).to_arrow_table(),
        "datafusion": lambda q: df.sql(q).to_arrow_table(),
    }
    print(f"== query suite, {rounds} interleaved rounds: ms, median [min-max]; ratio = median / DuckDB's")
    print(f"{'query':<12} {'tracesql':>24} {'duckdb ' + duckdb.__version__:>24} "
          f"{'datafusion ' + datafusion.__version__:>24} {'vs duckdb':>9} {'vs df':>6}")
    for name, sql in QUERIES.items():
        times = {engine: [] for engine in engines}
        for engine, run in engines.items():
            run(sql)  # warm: files in the page cache, plans cached where an engine caches them
        for _ in range(rounds):
            for engine, run in engines.items():
                start = time.perf_counter()
                run(sql)
                times[engine].append(time.perf_counter() - start)
        med = {e: statistics.median(t) for e, t in times.items()}
        flag = "" if med["tracesql"] <= med["duckdb"] else "  <- above 1.0"
        print(f"{name:<12} {span(times['tracesql']):>24} {span(times['duckdb']):>24} "
              f"{span(times['datafusion']):>24} {med['tracesql'] / med['duckdb']:>8.2f}x "
              f"{med['tracesql'] / med['datafusion']:>5.2f}x{flag}")


HANDOFF = textwrap.dedent(
    """
    import sys
    import tracesql

    def status(field):
        for line in open("/proc/self/status"):
            if line.startswith(field):
                return int(line.split()[1]) * 1024

    session = tracesql.open(sys.argv[1])
    result = session.sql(
        "select k.start_ns + t.v as start_ns, k.end_ns, k.correlation_id, k.stream_id "
        "from kernel k, (values (0), (1), (2)) t(v) limit 4000000")
    open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) starts again from here
    before = status("VmRSS")
    table = result.to_arrow()
    print(table.num_rows, table.nbytes, status("VmHWM") - before)
    """
)


def handoff(window):
    out = subprocess.run([sys.executable, "-c", HANDOFF, window], check=True, capture_output=True, text=True)
    rows, nbytes, grown = map(int, out.stdout.split())
    print(f"\n== hand-off to pyarrow: {rows:,} rows, {nbytes / 2**20:.0f} MB of Arrow data; peak RSS grew "
          f"{grown / 2**20:.0f} MB = {grown / nbytes:.2f}x its size (goal <= 1.2)")


# Both sides in one Python process (HTA's venv, with the tracesql wheel installed beside it),
# libraries imported first, rounds interleaved: what a notebook user waits for.
BOTH = textwrap.dedent(
    """
    import json, logging, os, sys, tempfile, time, warnings
    warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    import tracesql
    rounds, trace_dir, traces = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

    def hta():
        t = TraceAnalysis(trace_dir=trace_dir)
        ranks = t.t.get_ranks()
        t.get_temporal_breakdown(visualize=False)
        t.get_idle_time_breakdown(ranks=ranks, visualize=False)
        t.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
        t.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)

    def ours():
        with tempfile.TemporaryDirectory() as d:
            session = tracesql.import_kineto(traces, os.path.join(d, "w"))
            for name in ("temporal_breakdown", "idle_breakdown", "kernel_breakdown", "launch_stats"):
                session.report(name).to_arrow()

    times = {"hta": [], "ours": []}
    for _ in range(rounds):
        for side, run in (("hta", hta), ("ours", ours)):
            start = time.perf_counter()
            run()
            times[side].append(time.perf_counter() - start)
    print(json.dumps(times))
    """
)


def hta_analyses(data, work, hta_python, rounds):
    largest = max(glob.glob(os.path.join(data, "*.json*")), key=os.path.getsize)
    dlrm = sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))
    print(f"\n== import + 4 analyses in one Python process, {rounds} interleaved rounds: s, median [min-max]")
    print(f"{'input':<34} {'HTA':>20} {'tracesql':>20} {'speed-up':>9}")
    for label, traces in [(os.path.basename(largest)[:34], [largest]), (f"DLRM {len(dlrm)} ranks", dlrm)]:
        trace_dir = os.path.join(work, "hta-" + str(len(traces)))
        os.makedirs(trace_dir, exist_ok=True)
        for t in traces:
            link = os.path.join(trace_dir, os.path.basename(t))
            if not os.path.exists(link):
                os.symlink(os.path.abspath(t), link)
        out = subprocess.run([hta_python, "-c", BOTH, str(rounds), trace_dir, *traces],
                             check=True, capture_output=True, text=True)
        times = json.loads(out.stdout.strip().splitlines()[-1])
        theirs, ours = times["hta"], times["ours"]
        ratio = statistics.median(theirs) / statistics.median(ours)
        flag = "" if ratio >= 20 else "  <- below 20x"
        fmt = lambda ts: f"{statistics.median(ts):6.3f} [{min(ts):.3f}-{max(ts):.3f}]"  # noqa: E731
        print(f"{label:<34} {fmt(theirs):>20} {fmt(ours):>20} {ratio:>8.1f}x{flag}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("data")
    ap.add_argument("--events", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hta-python")
    ap.add_argument("--parts", default="queries,handoff,hta",
                    help="which parts to run, comma-separated (default: all three)")
    args = ap.parse_args()
    parts = args.parts.split(",")
    window = os.path.join(args.work, f"synth-{args.events}", "window_id=000001")
    if not os.path.exists(os.path.join(window, "kernel.parquet")):
        subprocess.run([sys.executable, "-m", "tracesql._cli", "synth", "--out", window,
                        "--events", str(args.events), "--seed", "1"], check=True)
    kernels = duckdb.sql(f"select count(*) from read_parquet('{window}/kernel.parquet')").fetchall()[0][0]
    print(f"window: {window} ({kernels:,} kernels); pyarrow {pa.__version__}; tracesql from {os.path.dirname(tracesql.__file__)}")
    if "queries" in parts:
        query_suite(window, args.rounds)
    if "handoff" in parts:
        handoff(window)
    if "hta" in parts and args.hta_python:
        hta_analyses(args.data, args.work, args.hta_python, max(3, args.rounds // 2))


if __name__ == "__main__":
    main()
