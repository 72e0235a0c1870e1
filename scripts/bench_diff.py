"""`tracesql diff` against HTA's trace diff, and on large windows (run by scripts/bench-diff.sh).

1. HTA 0.5.0: load both traces (`LabeledTrace`) + `TraceDiff.compare_traces`, against
   tracesql: `diff --by kernel` of both traces (imported on the way), on HTA's trace-diff pair and on DLRM
   rank 0 against rank 1; wall time and peak RSS, interleaved rounds, with the speed-up (goal
   >= 20x).
2. `tracesql diff` of two synthetic windows of EVENTS events each (seeds 1 and 2), every view
   (goal: <= 2 s at 1 M events).
"""
import glob, os, statistics, subprocess, sys, tempfile

from bench_util import spread, timed

binary, data, out, events, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

HTA_SCRIPT = r'''
import logging, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_diff import LabeledTrace, TraceDiff
control, test = LabeledTrace(trace_dir=sys.argv[1]), LabeledTrace(trace_dir=sys.argv[2])
TraceDiff.compare_traces(control, test)
'''


def folder_of(trace, tmp):
    """HTA reads a folder of ranks: one folder per trace."""
    folder = os.path.join(tmp, os.path.basename(trace).split(".json")[0])
    os.makedirs(folder, exist_ok=True)
    os.symlink(os.path.abspath(trace), os.path.join(folder, os.path.basename(trace)))
    return folder


def hta(control, test):
    with tempfile.TemporaryDirectory() as d:
        return timed([sys.executable, "-c", HTA_SCRIPT, folder_of(control, d), folder_of(test, d)])


def ours(control, test):
    """`tracesql diff` of the two traces as they are (it imports them on the way), by kernel."""
    return timed([binary, "diff", control, test, "--by", "kernel", "--format", "csv", "-o", os.devnull])


print(f"== tracesql (diff --by kernel of both traces, import included) against HTA (load both + compare_traces), "
      f"{rounds} interleaved rounds; wall s median [min-max], peak RSS MB median")
print(f"{'pair':<26} {'HTA s':>18} {'ours s':>18} {'speed-up':>8} {'HTA MB':>7} {'ours MB':>8}")
dlrm = sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))
pairs = [("HTA trace-diff pair", os.path.join(data, "hta_trace_diff", "control.json.gz"),
          os.path.join(data, "hta_trace_diff", "test.json.gz")),
         ("DLRM rank 0 vs 1", dlrm[0], dlrm[1])]
for label, control, test in pairs:
    theirs, mine = [], []
    for _ in range(rounds):
        theirs.append(hta(control, test))
        mine.append(ours(control, test))
    hw, ow = [w for w, _ in theirs], [w for w, _ in mine]
    print(f"{label:<26} {spread(hw):>18} {spread(ow):>18} {statistics.median(hw) / statistics.median(ow):>7.1f}x "
          f"{statistics.median([r for _, r in theirs]):>7.0f} {statistics.median([r for _, r in mine]):>8.0f}")

print(f"\n== tracesql diff of two synthetic windows of {events} events (seeds 1 and 2)")
windows = []
for seed in (1, 2):
    window = os.path.join(out, f"synth-{events}-{seed}")
    if not os.path.exists(window):
        subprocess.run([binary, "synth", "--out", window, "--events", str(events), "--seed", str(seed)],
                       check=True, capture_output=True)
    windows.append(window)
print(f"{'view':<10} {'wall s':>18} {'RSS MB':>7}")
for by in ("summary", "step", "kernel", "op", "annotation", "gpu-op"):
    runs = [timed([binary, "diff", *windows, "--by", by, "--format", "csv", "-o", os.devnull])
            for _ in range(rounds)]
    print(f"{by:<10} {spread([w for w, _ in runs]):>18} {statistics.median([r for _, r in runs]):>7.0f}")
