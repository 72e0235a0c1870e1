"""tracesql's reports against HTA, and their scaling (run by scripts/bench-reports.sh)."""
import glob, os, shutil, subprocess, sys, tempfile

from bench_util import timed

binary, data, out, small, large = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
FIVE = ["temporal_breakdown", "idle_breakdown", "kernel_breakdown", "comm_overlap", "launch_stats"]

HTA_SCRIPT = r'''
import logging, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = TraceAnalysis(trace_dir=sys.argv[1])
ranks = t.t.get_ranks()
t.get_temporal_breakdown(visualize=False)
t.get_idle_time_breakdown(ranks=ranks, visualize=False)
t.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
t.get_comm_comp_overlap(visualize=False)
t.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
'''


def ours(traces, window, together):
    """Import + the five reports, as five commands or one: total wall, max RSS."""
    shutil.rmtree(window, ignore_errors=True)
    wall, rss = timed([binary, "import", "kineto", *traces, "--output", window])
    runs = [FIVE] if together else [[name] for name in FIVE]
    for names in runs:
        with tempfile.TemporaryDirectory() as d:
            out = d if together else os.devnull
            w, r = timed([binary, "report", *names, "--window", window, "--format", "csv", "-o", out])
        wall, rss = wall + w, max(rss, r)
    return wall, rss


def hta(traces):
    with tempfile.TemporaryDirectory() as d:
        for t in traces:
            os.symlink(os.path.abspath(t), os.path.join(d, os.path.basename(t)))
        return timed([sys.executable, "-c", HTA_SCRIPT, d])


print("== tracesql (import + 5 reports) against HTA (load + 5 analyses)")
largest = max(glob.glob(os.path.join(data, "*.json*")), key=os.path.getsize)
dlrm = sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))
print(f"{'input':<52} {'HTA s':>7} {'ours s':>7} {'speed-up':>8} {'HTA MB':>7} {'ours MB':>8} {'RSS ratio':>9}")
for label, traces in [(os.path.basename(largest), [largest]), (f"DLRM ranks 0-{len(dlrm) - 1} (archive)", dlrm)]:
    hw, hr = hta(traces)
    for together in (False, True):
        ow, orss = ours(traces, os.path.join(out, "window"), together)
        how = "one report command" if together else "five report commands"
        row = f"{label[:30]}, {how}"
        print(f"{row:<52} {hw:>7.2f} {ow:>7.2f} {hw / ow:>7.1f}x {hr:>7.0f} {orss:>8.0f} {orss / hr:>9.2f}")

print()
print(f"== each report at {small:,} and {large:,} synthetic events (time at large / time at small; goal <= 12)")
windows = {}
for n in (small, large):
    w = os.path.join(out, f"synth-{n}")
    if not os.path.isdir(w):
        subprocess.run([binary, "synth", "--out", w, "--events", str(n), "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    windows[n] = w
names = subprocess.run([binary, "report", "--list"], check=True, capture_output=True, text=True).stdout
names = [line.split()[0] for line in names.splitlines() if line and not line.startswith(" ")]
print(f"{'report':<24} {'small s':>8} {'large s':>8} {'ratio':>6} {'large MB':>9}")
for name in names:
    ws, _ = timed([binary, "report", name, "--window", windows[small], "--format", "csv", "-o", os.devnull])
    wl, rl = timed([binary, "report", name, "--window", windows[large], "--format", "csv", "-o", os.devnull])
    flag = "" if wl / ws <= 12 else "  <- above 12"
    print(f"{name:<24} {ws:>8.2f} {wl:>8.2f} {wl / ws:>6.1f} {rl:>9.0f}{flag}")
