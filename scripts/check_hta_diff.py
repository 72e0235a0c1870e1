"""HTA's trace diff against `tracesql diff` on the same real traces (scripts/check-hta-diff.sh).

HTA's `TraceDiff.compare_traces` counts and sums the ops of one iteration of each trace by
name; an op is in iteration N when it starts inside ProfilerStep#N (CPU), or when the CPU
event it is correlated with is (GPU). `tracesql diff` puts each GPU op in the step whose span
holds the start of its launching call (`_diff_gpu_work`). For every pair of traces and every
paired step, this compares the two on the GPU ops (kernels, copies, sets): per (kind, name)
the count must be equal and the total duration within 1 ns per op (HTA keeps float µs:
HTA_DISABLE_NS_ROUNDING=1). Pairs: HTA's own trace-diff pair, and DLRM rank 0 against rank 1
and rank 2 against rank 3. Prints each difference and a count; exits 1 when there is one.
"""
import csv, glob, io, logging, os, shutil, subprocess, sys, warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
from hta.common.trace import Trace  # noqa: E402
from hta.trace_diff import LabeledTrace  # noqa: E402

binary, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
GPU_KINDS = ("kernel", "gpu_memcpy", "gpu_memset")


def pairs():
    diff = os.path.join(data, "hta_trace_diff")
    yield "hta_trace_diff", os.path.join(diff, "control.json.gz"), os.path.join(diff, "test.json.gz")
    dlrm = sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))
    yield "dlrm rank0 vs rank1", dlrm[0], dlrm[1]
    yield "dlrm rank2 vs rank3", dlrm[2], dlrm[3]


def imported(path):
    """The trace as a tracesql window (imported once)."""
    name = os.path.basename(path).split(".json")[0]
    window = os.path.join(work, "windows", name)
    if not os.path.exists(window):
        subprocess.run([binary, "import", "kineto", path, "--output", window],
                       check=True, capture_output=True, text=True)
    return window


def hta_trace(path):
    """HTA's trace of one file (its own folder: HTA reads a folder of ranks)."""
    folder = os.path.join(work, "hta", os.path.basename(path).split(".json")[0])
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, os.path.basename(path))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(path), link)
    trace = Trace(trace_dir=folder)
    trace.parse_traces()
    return LabeledTrace(label=path, t=trace)


def keyed(rows):
    """{(kind, name): (count, total µs)} of (kind, name, count, total µs) rows. Copies and
    sets count by kind: the gpu_op view names them `Memcpy`, `Memset`, where HTA has the
    Kineto name (`Memcpy HtoD (Pinned -> Device)`)."""
    out = {}
    for kind, name, count, total in rows:
        key = (kind, name if kind == "kernel" else "(all)")
        n, t = out.get(key, (0, 0.0))
        out[key] = (n + count, t + total)
    return out


def hta_gpu_ops(trace, iteration):
    """The GPU ops of one iteration, by HTA."""
    ops = trace.get_ops_summary(trace.extract_ops(None, iteration))
    return keyed((r.cat, r.name, int(r.counts), float(r.total_duration))
                 for r in ops.itertuples() if r.cat in GPU_KINDS)


def ours(base, new):
    """{(run, step): {(kind, name): (count, total µs)}} from `tracesql diff`."""
    sql = ("select run, step, kind, name, count(*) as n, sum(dur) as total_ns "
           "from _diff_gpu_work group by run, step, kind, name")
    out = subprocess.run([binary, "diff", base, new, "--sql", sql, "--format", "csv"],
                         check=True, capture_output=True, text=True).stdout
    steps = {}
    for r in csv.DictReader(io.StringIO(out)):
        steps.setdefault((r["run"], int(r["step"])), []).append(
            (r["kind"], r["name"], int(r["n"]), int(r["total_ns"]) / 1000.0))
    return {step: keyed(rows) for step, rows in steps.items()}


differences = compared = 0
for label, control, test in pairs():
    by_step = ours(imported(control), imported(test))
    hta = {"base": hta_trace(control), "new": hta_trace(test)}
    iterations = {run: t.iterations() for run, t in hta.items()}
    paired = min(len(its) for its in iterations.values())
    print(f"{label}: {paired} paired steps (HTA iterations {iterations['base']} and "
          f"{iterations['new']})")
    for k in range(paired):
        for run in ("base", "new"):
            theirs = hta_gpu_ops(hta[run], iterations[run][k])
            mine = by_step.get((run, k + 1), {})
            for key in sorted(set(theirs) | set(mine)):
                compared += 1
                (hn, ht), (on, ot) = theirs.get(key, (0, 0.0)), mine.get(key, (0, 0.0))
                if hn != on or abs(ht - ot) > 0.001 * max(hn, 1) + 1e-6:
                    differences += 1
                    print(f"  step {k + 1} {run} {key[0]} {key[1][:70]!r}: HTA {hn} ops "
                          f"{ht:.3f} µs, ours {on} ops {ot:.3f} µs")
print(f"{compared} (step, run, kind, name) rows compared, {differences} differ")
sys.exit(1 if differences else 0)
