"""HTA's critical path against `tracesql report critical_path_summary` on real traces
(scripts/check-hta-critical-path.sh).

For every trace and every instance of its annotation, HTA's lightweight critical path
(TraceInsight's `critical_path_analysis`, its defaults) gives the path's length (the summed
weights of its edges, µs) and the share of each bound_by; tracesql gives the same per step
(ns). They must agree within 1 µs and 0.1 percentage point. HTA counts instances in its row
order, GPU annotations included; each is matched to the tracesql step that starts at the same
time (an instance on the GPU timeline has none, and is listed as skipped). HTA keeps the last
ProfilerStep's GPU ops out when a trace has two or more, so the last step is not compared.
HTA's trace with CUDA graphs is compared too, and differs where a step replays graphs: HTA
keeps one GPU op per cudaGraphLaunch (the one the launch's correlation points at last,
HolisticTraceAnalysis#290), tracesql every op of the replay; those differences are listed and
expected. Without cuda_sync records HTA has no synchronization edges, so tracesql runs with
infer_syncs=0. HTA keeps its float µs (HTA_DISABLE_NS_ROUNDING=1), as a window keeps ns.

Beyond the real traces: synthetic one-process traces (scripts/synth_kineto.py; `--synthetic N`
of them, default 4, 20,000 events each), many steps each. Their ops often start at the ns
another ends; HTA computes each end as float µs (ts - min_ts + dur), which can land a hair
after the next op's start, and its call stack (one pop per end, whatever is on top) then nests
the next op, and the calls after it, under the op that ended. A step where that happens and
the paths differ is listed as expected. Prints each instance and its verdict; exits 1 on an
unexpected difference.
"""
import csv, glob, io, logging, os, subprocess, sys, time, warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
os.environ["CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE"] = "0"
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
from hta.trace_analysis import TraceAnalysis  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import synth_kineto  # noqa: E402

binary, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
synthetic = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--synthetic" else 4
FORWARD = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
# HTA's bound_by names and ours
CAUSE = {"cpu_bound": "cpu", "gpu_compute_bound": "gpu_compute",
         "gpu_communication_bound": "gpu_communication",
         "gpu_kernel_kernel_overhead": "kernel_kernel_overhead",
         "gpu_kernel_launch_overhead": "launch_overhead", "data_loading": "data_loading"}


GRAPHS, TOUCHING = "graph replays", "HTA's float µs nest touching ops"


def cases():
    """(label, trace, HTA's annotation, our LIKE pattern, why HTA's graph may differ or None)"""
    # HTA's critical-path test traces, as the repository's test data has them
    cp = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "kineto", "hta_critical_path")
    yield "event sync", os.path.join(cp, "cuda_event_sync__event_sync_trace.json.gz"), \
        "ProfilerStep", "ProfilerStep#%", None
    yield "simple_add", os.path.join(cp, "simple_add__benchmark_result_493459_1694039959_trace.json.gz"), \
        FORWARD, FORWARD, None
    yield "alexnet", os.path.join(data, "facebookresearch_HolisticTraceAnalysis__benchmark_result_2869224_1695835535_trace.json.gz"), \
        FORWARD, FORWARD, None
    yield "mi250 (ROCm)", os.path.join(data, "facebookresearch_HolisticTraceAnalysis__mi250_minitoy_train_ROCm6_2_kineto.json.gz"), \
        "ProfilerStep", "ProfilerStep#%", None
    for path in sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*"))):
        yield "dlrm " + os.path.basename(path).split("_")[0], path, "ProfilerStep", \
            "ProfilerStep#%", None
    yield "CUDA graphs (HTA test)", os.path.join(data, "facebookresearch_HolisticTraceAnalysis__test.json.gz"), \
        "ProfilerStep", "ProfilerStep#%", GRAPHS
    for seed in range(1, synthetic + 1):
        trace = os.path.join(work, "synthetic", f"seed{seed}.json")
        yield f"synthetic, seed {seed}", synth_kineto.make(binary, trace, 20000, seed), \
            "ProfilerStep", "ProfilerStep#%", TOUCHING


def ours(path, pattern):
    """{step start (ns): (length ns, {bound_by: share %})} and the seconds it took."""
    name = os.path.basename(path).split(".json")[0]
    window = os.path.join(work, "windows", name)
    if not os.path.exists(window):
        subprocess.run([binary, "import", "kineto", path, "--output", window],
                       check=True, capture_output=True, text=True)
    started = time.perf_counter()
    csv_text = subprocess.run(
        [binary, "report", "critical_path_summary", "-w", window, "--param",
         f"annotation={pattern}", "--param", "infer_syncs=0", "--format", "csv"],
        check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - started
    steps = subprocess.run(
        [binary, "query", "-w", window, "--format", "csv",
         f"SELECT ts_ns FROM cpu_event WHERE ph = 'X' AND cat = 'user_annotation' "
         f"AND name LIKE '{pattern}' ORDER BY ts_ns, event_index"],
        check=True, capture_output=True, text=True).stdout.split()[1:]
    result = {int(ts): (0, {}) for ts in steps}
    starts = [int(ts) for ts in steps]
    for row in csv.DictReader(io.StringIO(csv_text)):
        ts = starts[int(row["step"])]
        length, shares = result[ts]
        shares[row["bound_by"]] = float(row["share_pct"])
        result[ts] = (int(row["path_ns"]), shares)
    return result, seconds


def touching(df, start, end):
    """Whether HTA's float µs nest an op of the range [start, end] (HTA's µs) into another that
    ends, in ns, where it starts (see above)."""
    cpu = df[df["stream"].eq(-1) & df["ts"].between(start, end) & df["dur"].gt(0)]
    ends = cpu.assign(at=((cpu["ts"] + cpu["dur"]) * 1000).round(), end=cpu["ts"] + cpu["dur"])
    starts = cpu.assign(at=(cpu["ts"] * 1000).round())
    pairs = ends[["pid", "at", "end"]].merge(starts[["pid", "at", "ts"]], on=["pid", "at"])
    return bool((pairs["end"] > pairs["ts"]).any())


def hta(path, annotation, why):
    """[(instance, start µs, length µs, {bound_by: share %}, why it may differ) or an error],
    seconds"""
    folder = os.path.join(work, "hta", os.path.basename(path).split(".json")[0])
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, os.path.basename(path))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(path), link)
    started = time.perf_counter()
    analysis = TraceAnalysis(trace_dir=folder)
    rank = analysis.t.get_ranks()[0]
    df = analysis.t.get_trace(rank)
    symbols = analysis.t.symbol_table.get_sym_table()
    names = df["name"].map(lambda i: symbols[i])
    instances = df[names.str.contains(annotation, regex=False)]
    steps = [n for n in set(names) if n.startswith("ProfilerStep#")]
    out = []
    for i in range(len(instances)):
        start = int(instances.iloc[i]["ts"]) + int(analysis.t.min_ts)
        if annotation == "ProfilerStep" and len(steps) >= 2 and \
                instances.iloc[i]["ts"] >= df[names.str.startswith("ProfilerStep#")]["ts"].max():
            out.append((i, start, None, "the last ProfilerStep (HTA drops its GPU ops)", None))
            continue
        try:
            graph, ok = analysis.critical_path_analysis(
                rank=rank, annotation=annotation, instance_id=i)
        except Exception as e:  # noqa: BLE001 (HTA's own failures are listed)
            out.append((i, start, None, f"HTA fails: {type(e).__name__}: {e}", None))
            continue
        breakdown = graph.get_critical_path_breakdown()
        total = breakdown["duration"].sum()
        shares = {CAUSE[k]: 100.0 * v / total
                  for k, v in breakdown.groupby("bound_by")["duration"].sum().items() if k}
        row = instances.iloc[i]
        excuse = why if why != TOUCHING or touching(df, row["ts"], row["ts"] + row["dur"]) else None
        out.append((i, start, total, shares, excuse))
    return out, time.perf_counter() - started


status, compared, expected = 0, 0, 0
for label, path, annotation, pattern, why in cases():
    theirs, hta_s = hta(path, annotation, why)
    mine, our_s = ours(path, pattern)
    print(f"== {label}: {os.path.basename(path)}; HTA {hta_s:.2f} s, tracesql {our_s:.2f} s")
    for i, start, length, shares, excuse in theirs:
        match = [ts for ts in mine if abs(ts - start * 1000) < 1000]
        if length is None:
            print(f"  instance {i}: skipped, {shares}")
            continue
        if not match:
            print(f"  instance {i}: skipped, not a CPU annotation of the trace (starts {start} µs)")
            continue
        our_length, our_shares = mine[match[0]]
        causes = set(shares) | set(our_shares)
        worst = max(abs(shares.get(c, 0.0) - our_shares.get(c, 0.0)) for c in causes)
        same = abs(our_length / 1000 - length) <= 1 and worst <= 0.1
        compared += 1
        verdict = "same" if same else f"differs, as expected ({excuse})" if excuse else "DIFFERENT"
        if not same and excuse:
            expected += 1
        elif not same:
            status = 1
        print(f"  instance {i}: HTA {length:.0f} µs, tracesql {our_length / 1000:.0f} µs; "
              f"shares differ by {worst:.3f} pp at most: {verdict}")
        if not same:
            for c in sorted(causes):
                print(f"    {c}: HTA {shares.get(c, 0.0):.3f} %, tracesql {our_shares.get(c, 0.0):.3f} %")
print(f"{compared} paths compared, {expected} of them differ as expected (graph replays HTA leaves "
      f"out, or touching ops its float µs nest); "
      f"{'the others agree' if status == 0 else 'some others differ'}")
sys.exit(status)
