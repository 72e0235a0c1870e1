"""HTA against tracesql's reports on the same real traces (run by scripts/check-hta.sh).

For each trace set (one trace, or the DLRM ranks): HTA loads the raw traces; tracesql imports
them (`import kineto`) and runs its reports. Two passes: HTA as it is configured by default
(it drops the last ProfilerStep and GPU ops no kept CPU event launched, and rounds float µs to
whole µs, start up and end down), then HTA analyzing what a window holds (the last step
included: `include_last_profiler_step=True`; ns kept: `HTA_DISABLE_NS_ROUNDING=1`). The goal
applies to the second pass; the first shows what HTA's own choices change. Every compared number is printed with HTA's value,
ours and the difference; the last lines count the rows outside the goal (times 1 µs, shares
0.1 percentage point). HTA works in whole µs; our reports in exact ns (shown here in µs).
"""
import glob, json, logging, os, shutil, subprocess, sys, warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis  # noqa: E402
from hta.analyzers.breakdown_analysis import BreakdownAnalysis  # noqa: E402
from hta.utils.utils import get_kernel_type  # noqa: E402

binary, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
TIME_GOAL_US, SHARE_GOAL_PP = 1.0, 0.1
rows, outside = [], []


def check(trace, report, key, hta, ours, kind):
    """Record one comparison; kind 'us' (a time) or 'pp' (a share in percent)."""
    diff = None if hta is None or ours is None else ours - hta
    goal = TIME_GOAL_US if kind == "us" else SHARE_GOAL_PP
    bad = diff is None or abs(diff) > goal
    rows.append((trace, report, key, hta, ours, diff, kind, bad))
    if bad:
        outside.append(rows[-1])


def report(window, name, **params):
    args = [binary, "report", name, "--window", window, "--format", "json"]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def trace_sets():
    dlrm = sorted(glob.glob(os.path.join(data, "param_dlrm_8rank", "*.json*")))
    yield "dlrm", dlrm
    for path in sorted(glob.glob(os.path.join(data, "*.json*"))):
        yield os.path.basename(path).split(".json")[0], [path]


def hta_for(path, tmp, whole):
    """HTA over one trace file (its own folder, so each rank is analyzed alone)."""
    os.makedirs(tmp, exist_ok=True)
    link = os.path.join(tmp, os.path.basename(path))
    if not os.path.exists(link):
        os.symlink(os.path.abspath(path), link)
    return TraceAnalysis(trace_dir=tmp, include_last_profiler_step=whole)


passes = [("HTA defaults", False), ("HTA on the whole window, ns kept", True)]
windows = {}
for name, paths in trace_sets():
    window = os.path.join(work, name)
    imp = subprocess.run([binary, "import", "kineto", *paths, "--output", window],
                         capture_output=True, text=True)
    if imp.returncode != 0:
        print(f"{name}: import failed: {imp.stderr.strip()}")
        continue
    windows[name] = (window, paths)

results = {}
for pass_name, whole in passes:
  rows, outside = [], []
  results[pass_name] = (rows, outside)
  if whole:
      os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
  for name, (window, paths) in windows.items():
      ours = {r: report(window, r) for r in
              ["temporal_breakdown", "idle_breakdown", "kernel_breakdown", "comm_overlap", "launch_stats"]}
      for i, path in enumerate(paths):
          label = f"{name}/rank{i}" if len(paths) > 1 else name
          of_rank = (lambda rs: [r for r in rs if r.get("rank", i) == i])
          try:
              t = hta_for(path, os.path.join(work, f"hta-{name}-{i}"), whole)
              rank = list(t.t.traces.keys())[0]
          except Exception as e:  # HTA cannot read every trace
              print(f"{label}: HTA failed to load: {type(e).__name__}: {e}")
              continue
          # temporal breakdown
          try:
              h = t.get_temporal_breakdown(visualize=False).iloc[0]
              o = of_rank(ours["temporal_breakdown"])[0]
              for col, hcol in [("idle_ns", "idle_time(us)"), ("compute_ns", "compute_time(us)"),
                                ("non_compute_ns", "non_compute_time(us)"), ("kernel_ns", "kernel_time(us)")]:
                  check(label, "temporal_breakdown", col, float(h[hcol]), o[col] / 1000, "us")
              for col, hcol in [("idle_pct", "idle_time_pctg"), ("compute_pct", "compute_time_pctg"),
                                ("non_compute_pct", "non_compute_time_pctg")]:
                  check(label, "temporal_breakdown", col, float(h[hcol]), o[col], "pp")
          except Exception as e:
              print(f"{label}: HTA temporal breakdown failed: {type(e).__name__}: {e}")
          # idle time breakdown, per stream and category
          try:
              h, _ = t.get_idle_time_breakdown(ranks=[rank], visualize=False)
              mine = {(r["stream_id"], r["idle_category"]): r for r in of_rank(ours["idle_breakdown"])}
              # HTA rounds its ratio for display; the ratio of its own idle times is unrounded
              stream_idle = h.groupby("stream")["idle_time"].sum()
              for _, hr in h.iterrows():
                  o = mine.get((int(hr["stream"]), hr["idle_category"]))
                  key = f"stream {int(hr['stream'])} {hr['idle_category']}"
                  check(label, "idle_breakdown", key + " idle", float(hr["idle_time"]),
                        None if o is None else o["idle_ns"] / 1000, "us")
                  total = float(stream_idle[hr["stream"]])
                  if o is not None and o.get("idle_ratio") is not None and total > 0:
                      check(label, "idle_breakdown", key + " ratio %", 100 * float(hr["idle_time"]) / total,
                            100 * o["idle_ratio"], "pp")
          except Exception as e:
              print(f"{label}: HTA idle breakdown failed: {type(e).__name__}: {e}")
          # kernel-type breakdown of this rank alone (HTA's table sums all ranks)
          try:
              sym = t.t.symbol_table.get_sym_table()
              df = t.t.get_trace(rank)
              kernels = df[df["stream"].ne(-1)].copy()
              kernels["kernel_type"] = kernels["name"].apply(lambda n: get_kernel_type(sym[n]))
              h = BreakdownAnalysis._get_gpu_kernel_type_time(kernels, ["COMPUTATION", "COMMUNICATION", "MEMORY"])
              total = h["sum"].sum()
              mine = {r["kernel_type"]: r for r in of_rank(ours["kernel_breakdown"])}
              for _, hr in h.iterrows():
                  o = mine.get(hr["kernel_type"])
                  check(label, "kernel_breakdown", hr["kernel_type"], float(hr["sum"]),
                        None if o is None else o["total_ns"] / 1000, "us")
                  check(label, "kernel_breakdown", hr["kernel_type"] + " %", 100 * float(hr["sum"]) / total,
                        None if o is None else o["pct"], "pp")
          except Exception as e:
              print(f"{label}: HTA kernel breakdown failed: {type(e).__name__}: {e}")
          # comm/comp overlap (NaN in HTA when there is no communication)
          try:
              h = t.get_comm_comp_overlap(visualize=False).iloc[0]
              o = of_rank(ours["comm_overlap"])
              hv = float(h["comp_comm_overlap_pctg"])
              ov = o[0].get("comm_comp_overlap_pct") if o else None
              if hv == hv or ov is not None:
                  check(label, "comm_overlap", "comm_comp_overlap_pct", hv if hv == hv else None, ov, "pp")
          except Exception as e:
              print(f"{label}: HTA comm overlap failed: {type(e).__name__}: {e}")
          # kernel launch statistics, per correlation id
          try:
              h = t.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
              mine = {}
              for r in of_rank(ours["launch_stats"]):
                  mine.setdefault(r["correlation_id"], []).append(r)
              worst = {"cpu_duration": 0.0, "gpu_duration": 0.0, "launch_delay": 0.0}
              missing = 0
              for _, hr in h.iterrows():
                  cands = mine.get(int(hr["correlation"]))
                  if not cands:
                      missing += 1
                      continue
                  o = min(cands, key=lambda r: abs(r["gpu_duration_ns"] / 1000 - hr["gpu_duration"]))
                  for col, ocol in [("cpu_duration", "cpu_duration_ns"), ("gpu_duration", "gpu_duration_ns"),
                                    ("launch_delay", "launch_delay_ns")]:
                      worst[col] = max(worst[col], abs(o[ocol] / 1000 - float(hr[col])))
              print(f"{label}: launch_stats: HTA {len(h)} launches, ours {sum(map(len, mine.values()))}, "
                    f"{missing} of HTA's not in ours; worst |diff| µs: "
                    + ", ".join(f"{k} {v:.3f}" for k, v in worst.items()))
              check(label, "launch_stats", "launches (count)", float(len(h)), float(sum(map(len, mine.values()))), "us")
              for k, v in worst.items():
                  check(label, "launch_stats", f"worst {k}", 0.0, v, "us")
          except Exception as e:
              print(f"{label}: HTA launch stats failed: {type(e).__name__}: {e}")

for pass_name, (rows, outside) in results.items():
    print()
    print(f"== {pass_name}")
    print(f"{'trace':<48} {'report':<19} {'value':<46} {'HTA':>14} {'tracesql':>14} {'diff':>10}")
    for trace, rep, key, hta, mine, diff, kind, bad in rows:
        fmt = lambda v: "-" if v is None else f"{v:.3f}"
        print(f"{trace[:48]:<48} {rep:<19} {key[:46]:<46} {fmt(hta):>14} {fmt(mine):>14} "
              f"{fmt(diff):>10}{' <- outside goal' if bad else ''}")
for pass_name, (rows, outside) in results.items():
    print(f"{pass_name}: {len(rows)} comparisons, {len(outside)} outside the goal "
          f"(times {TIME_GOAL_US} µs, shares {SHARE_GOAL_PP} pp)")
