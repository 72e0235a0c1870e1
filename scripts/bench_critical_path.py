"""The critical path's speed (scripts/bench-critical-path.sh), in one run: tracesql (import of
the Kineto trace, then `report critical_path_summary` over every ProfilerStep, two commands)
against TraceInsight 0.6.1 (load the trace, then `critical_path_analysis` for every step but
the last, which HTA cannot analyze whole) on the real traces that have steps, and on a
synthetic one-process trace of EVENTS / 10 events (scripts/synth_kineto.py; HTA's paths agree
with ours there, scripts/check-hta-critical-path.sh); then tracesql alone on a synthetic
window of EVENTS events. Rounds interleave the tools; each figure is the
median [min-max] of its rounds.
"""
import glob, os, shutil, subprocess, sys, time, warnings

sys.path.insert(0, os.path.dirname(__file__))
from bench_util import spread, timed  # noqa: E402
import synth_kineto  # noqa: E402

binary, data, work, events, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
python = sys.argv[6]
HTA = r"""
import logging, os, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
rank = analysis.t.get_ranks()[0]
df = analysis.t.get_trace(rank)
names = df["name"].map(lambda i: analysis.t.symbol_table.get_sym_table()[i])
steps = names.str.startswith("ProfilerStep#").sum()
for i in range(max(steps - 1, 1)):
    analysis.critical_path_analysis(rank=rank, annotation="ProfilerStep", instance_id=i)
"""


def traces():
    yield "HTA's CUDA-graph trace", os.path.join(data, "facebookresearch_HolisticTraceAnalysis__test.json.gz")
    for path in sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))[:1]:
        yield "DLRM rank 0", path
    size = events // 10
    trace = os.path.join(work, f"synthetic-{size}.json")
    yield f"synthetic, {size // 1000}k events", synth_kineto.make(binary, trace, size, 1)


def ours(path, window):
    shutil.rmtree(window, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([binary, "import", "kineto", path, "--output", window], check=True,
                   capture_output=True)
    subprocess.run([binary, "report", "critical_path_summary", "-w", window, "--format", "csv"],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def theirs(path, folder):
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, os.path.basename(path))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(path), link)
    start = time.perf_counter()
    subprocess.run([python, "-c", HTA, folder], check=True, capture_output=True)
    return time.perf_counter() - start


print(f"{'trace':<24} {'HTA s':>18} {'tracesql s':>18} {'speed-up':>9}")
for label, path in traces():
    name = os.path.basename(path).split(".json")[0]
    hta_s, our_s = [], []
    for _ in range(rounds):
        hta_s.append(theirs(path, os.path.join(work, "hta", name)))
        our_s.append(ours(path, os.path.join(work, "windows", name)))
    ratio = sorted(hta_s)[len(hta_s) // 2] / sorted(our_s)[len(our_s) // 2]
    print(f"{label:<24} {spread(hta_s):>18} {spread(our_s):>18} {ratio:>8.1f}x")

window = os.path.join(work, f"synth-{events}-steps")
if not os.path.exists(window):
    subprocess.run([binary, "synth", "--out", window, "--events", str(events), "--seed", "1", "--steps"],
                   check=True, capture_output=True)
times, peaks = [], []
for _ in range(rounds):
    wall, rss = timed([binary, "report", "critical_path_summary", "-w", window, "--format", "csv"])
    times.append(wall)
    peaks.append(rss)
steps = subprocess.run([binary, "query", "-w", window, "--format", "csv",
                        "SELECT count(*) FROM cpu_event WHERE name LIKE 'ProfilerStep#%'"],
                       check=True, capture_output=True, text=True).stdout.split()[1]
print(f"synthetic window, {events} events, {steps} steps: critical_path_summary {spread(times)} s, "
      f"peak RSS {max(peaks):.0f} MB (goal: 2 s at 1 M events)")
