"""A synthetic Kineto trace that HTA can analyze, for comparing with HTA beyond the few real
traces at hand (scripts/check_hta_critical_path.py, scripts/bench_critical_path.py).

`tracesql synth --steps` (no CUDA graphs: HTA keeps one op of a replay) exported as Chrome
JSON is Kineto's format, but not what HTA's one-rank analyses assume, so it is changed:
- one process: a synthetic window has two training processes whose steps overlap in time;
  the first process's CPU events and calls are kept, with the GPU ops and flows they launched;
- correlation ids + 1,000,000: TraceInsight downcasts small ids to int16, then fails to store
  row numbers in them;
- no `baseTimeNanoseconds`, so both tools read the same µs clock.

    python3 scripts/synth_kineto.py TRACESQL_BIN OUT.json EVENTS SEED
"""
import json, os, subprocess, sys, tempfile

CPU_CATS = {"cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver",
            "cuda_sync"}
NO_GRAPHS = "graphs,graph_deps,host_nodes,event_nodes"


def one_process(trace):
    """The trace of its first process (see above), in place."""
    events = trace["traceEvents"]
    pids = sorted({e["pid"] for e in events if e.get("cat") == "user_annotation"})
    kept = pids[0]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and e["pid"] == kept}
    out = []
    for e in events:
        cat, args = e.get("cat"), e.get("args") or {}
        if cat in CPU_CATS or (e.get("ph") == "M" and e.get("pid") in pids):
            if e.get("pid") != kept:
                continue
        elif "correlation" in args and args["correlation"] not in launched:
            continue
        elif cat == "ac2g" and e["id"] not in launched:
            continue
        if "correlation" in args:
            args["correlation"] += 1_000_000
        if cat == "ac2g":
            e["id"] += 1_000_000
        out.append(e)
    trace["traceEvents"] = out
    trace.pop("baseTimeNanoseconds", None)


def make(binary, out, events, seed):
    """Write the trace of `synth --events EVENTS --seed SEED` to `out` (once)."""
    if os.path.exists(out):
        return out
    with tempfile.TemporaryDirectory() as tmp:
        window, chrome = os.path.join(tmp, "w"), os.path.join(tmp, "trace.json")
        subprocess.run([binary, "synth", "--out", window, "--events", str(events), "--seed",
                        str(seed), "--steps", "--without", NO_GRAPHS], check=True,
                       capture_output=True)
        subprocess.run([binary, "export", "-w", window, "-o", chrome], check=True,
                       capture_output=True)
        with open(chrome) as f:
            trace = json.load(f)
    one_process(trace)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".part", "w") as f:
        json.dump(trace, f)
    os.replace(out + ".part", out)
    return out


if __name__ == "__main__":
    make(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
