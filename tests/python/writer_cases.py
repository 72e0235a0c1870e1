"""Windows for tests/it/python_writer.rs: the seed's example window and synth-like windows
built here, each written twice: as the oracle's WINDOW.json (+ CPU trace) and, from the
same in-memory window (oracle.window_from_json_obj of that JSON), by tracesql_window.

    python writer_cases.py SEED_DIR OUT_DIR      prints one case name per line

OUT_DIR/NAME.window.json, OUT_DIR/NAME.cpu.json: the oracle's inputs;
OUT_DIR/NAME/window_id=000001/: the window folder tracesql_window wrote.
"""

import json
import os
import random
import sys

BASE_NS = 1759300074000000000
PID, OS_TID, RAW_TID = 4242, 4243, 2596935424  # RAW_TID's low 32 bits, signed: -1698031872
DRIVER_TID = 4251
RT_LAUNCH, RT_MEMCPY, RT_MEMSET, RT_GRAPH, RT_GET_DEVICE, RT_SYNC = 211, 41, 51, 311, 17, 131
RT_EVENT_RECORD, RT_EVENT_SYNC = 135, 137
DRV_LAUNCH = 307
KERNELS = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
    "ampere_sgemm_128x64_tn",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(Params)",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "",
]
STREAMS = [7, 13, 20]


def _us(ns):
    """Kineto's microseconds with three decimals, relative to BASE_NS."""
    return round((ns - BASE_NS) / 1000.0, 3)


class Window:
    """Columns as lists (the oracle's WINDOW.json form), filled row by row."""

    def __init__(self):
        self.columns = {}

    def row(self, kind, **cells):
        cols = self.columns.setdefault(kind, {})
        n = len(next(iter(cols.values()))) if cols else 0
        for name, value in cells.items():
            cols.setdefault(name, [None] * n).append(value)
        for name, values in cols.items():
            if len(values) == n:
                values.append(None)


def synth(seed, ops, everything):
    """A synth-like window: launches of kernels, copies and sets from cpu_ops (external ids),
    user annotations, graph replays with dependencies, host and event-record nodes, lanes,
    metadata, syncs and events, driver calls, overhead, environment and PM samples; with
    everything=False only the required columns of kernels, copies and runtime calls."""
    rng = random.Random(seed)
    w = Window()
    events = [
        {"name": "process_name", "ph": "M", "ts": 0, "pid": PID, "tid": 0, "args": {"name": "python"}},
        {"name": "thread_name", "ph": "M", "ts": 0, "pid": PID, "tid": OS_TID,
         "args": {"name": f"thread {OS_TID} (python)"}},
    ]
    start = BASE_NS + 5_000_000_000
    t = start + 1000
    gpu_free = {s: t for s in STREAMS}
    corr, ext, user_ext = 100, 1, 0
    user_annotations, graph_deps, graph_events = {}, {}, {}
    annotations = [
        {"stage": "fwd", "layer": 1},
        [{"Process Group Name": "5", "In msg nelems": 2048}],
        "region_b",
        7,
    ]
    graph_no = 2
    for op in range(ops):
        if everything and op % 25 == 0:
            user_ext = ext
            ext += 1
            name = rng.choice(["forward", "backward", "optimizer.step"])
            user_annotations[user_ext] = name
            events.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": PID,
                           "tid": OS_TID, "ts": _us(t), "dur": 50.0,
                           "args": {"External id": user_ext}})
        op_ext = ext
        ext += 1
        op_start = t
        what = rng.random()
        graphed = everything and what < 0.15
        corr += 1
        api_start = t + rng.randint(200, 900)
        api_end = api_start + rng.randint(1000, 5000)
        cbid = RT_GRAPH if graphed else RT_LAUNCH if what < 0.7 else RT_MEMCPY if what < 0.85 else RT_MEMSET
        w.row("cuda_runtime", start_ns=api_start, end_ns=api_end, cbid=cbid, process_id=PID,
              thread_id=RAW_TID, correlation_id=corr)
        w.row("external_correlation", correlation_id=corr, external_id=op_ext,
              **({"user_external_id": user_ext or op_ext} if everything else {}))
        stream = rng.choice(STREAMS)
        if graphed:
            graph_no += 1
            gid = graph_no
            prev = None
            ready = max(api_end, gpu_free[stream])
            for node in range(1, rng.randint(2, 5)):
                gnid = (gid << 32) | node
                s = ready + rng.randint(0, 3000)
                e = s + rng.randint(2000, 20000)
                ready = e
                lane = 100000 + node % 2
                w.row("kernel", start_ns=s, end_ns=e, device_id=0, context_id=1,
                      stream_id=stream, correlation_id=corr, name=rng.choice(KERNELS),
                      grid_x=rng.choice([1, 32, 128]), grid_y=1, grid_z=1, block_x=256,
                      block_y=1, block_z=1, registers_per_thread=32, static_shared_memory=0,
                      dynamic_shared_memory=1024, priority=0, queued=0, channel=3,
                      channel_type=1, graph_id=gid, graph_node_id=gnid,
                      annotation=annotations[node % len(annotations)],
                      metadata=None, logical_lane=lane, lane_name=f"lane{lane - 100000}")
                graph_deps[gnid] = [] if prev is None else [prev]
                prev = gnid
            host = (gid << 32) | 9
            w.row("graph_host_node", start_ns=ready + 100, end_ns=ready + 900, device_id=0,
                  context_id=1, stream_id=stream, correlation_id=corr, graph_id=gid,
                  graph_node_id=host, annotation=None, process_id=PID, thread_id=4250,
                  host_fn="my_host_callback", host_fn_addr=140716318938768)
            graph_deps[host] = [prev]
            rec = (gid << 32) | 10
            w.row("graph_event_node", start_ns=ready + 1000, end_ns=ready + 1000, device_id=0,
                  context_id=1, stream_id=stream, correlation_id=corr, graph_id=gid,
                  graph_node_id=rec, annotation=None)
            graph_events[rec] = 93827051159277 + gid
            gpu_free[stream] = ready + 1000
        else:
            s = max(api_end + rng.randint(500, 4000), gpu_free[stream] - rng.choice([0, 0, 100]))
            e = s + rng.randint(1000, 40000)
            gpu_free[stream] = e
            common = dict(start_ns=s, end_ns=e, device_id=0, context_id=1, stream_id=stream,
                          correlation_id=corr, graph_id=0, graph_node_id=0, annotation=None)
            if cbid == RT_LAUNCH:
                k = rng.randrange(len(KERNELS))
                extra = {}
                if everything:
                    meta = ('{"func": "AllReduce", "count": %d, "datatype": "ncclFloat32"}'
                            % rng.randint(1, 4096)) if k == 3 else None
                    extra = dict(metadata=meta, logical_lane=stream, lane_name=None)
                w.row("kernel", **common, name=KERNELS[k], grid_x=rng.choice([1, 80, 1024]),
                      grid_y=1, grid_z=1, block_x=rng.choice([128, 256]), block_y=1,
                      block_z=1, registers_per_thread=rng.choice([16, 32, 64]),
                      static_shared_memory=0, dynamic_shared_memory=rng.choice([0, 4096]),
                      priority=0, queued=rng.choice([0, api_end]),
                      channel=rng.choice([3, 4, 4294967295]), channel_type=1, **extra)
            elif cbid == RT_MEMCPY:
                w.row("gpu_memcpy", **common, bytes=rng.choice([4, 4096, 1 << 20]),
                      copy_kind=rng.choice([1, 2, 8]), src_kind=2, dst_kind=3, flags=1,
                      channel=5, channel_type=2)
            else:
                w.row("gpu_memset", **common, bytes=1024, value=0, memory_kind=3, flags=1,
                      channel=5, channel_type=2)
        if everything and rng.random() < 0.1:
            corr += 1
            gs = api_end + 100
            w.row("cuda_runtime", start_ns=gs, end_ns=gs + 50, cbid=RT_GET_DEVICE,
                  process_id=PID, thread_id=RAW_TID, correlation_id=corr)
        if everything and rng.random() < 0.1:
            corr += 1
            ds = api_end + 300
            w.row("cuda_driver", start_ns=ds, end_ns=ds + 700, cbid=DRV_LAUNCH, process_id=PID,
                  thread_id=DRIVER_TID, correlation_id=corr)
        if everything and rng.random() < 0.05:
            corr += 1
            es = api_end + 500
            w.row("cuda_runtime", start_ns=es, end_ns=es + 100, cbid=RT_EVENT_RECORD,
                  process_id=PID, thread_id=RAW_TID, correlation_id=corr)
            w.row("cuda_event", correlation_id=corr, context_id=1, device_id=0,
                  stream_id=stream, cuda_event_id=9, cuda_event_sync_id=corr * 10)
            corr += 1
            ss = es + 2000
            w.row("cuda_runtime", start_ns=ss, end_ns=ss + 3000, cbid=RT_EVENT_SYNC,
                  process_id=PID, thread_id=RAW_TID, correlation_id=corr)
            w.row("cuda_sync", start_ns=ss + 10, end_ns=ss + 2900, sync_type=1, context_id=1,
                  stream_id=4294967295, correlation_id=corr, cuda_event_id=9,
                  cuda_event_sync_id=(corr - 1) * 10)
        if everything and rng.random() < 0.05:
            os_ = api_end + 50
            w.row("overhead", start_ns=os_, end_ns=os_ + 400,
                  name=rng.choice(["Instrumentation", "Buffer Flush", "Resource"]))
        op_end = api_end + rng.randint(100, 2000)
        events.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{op % 7}", "pid": PID,
                       "tid": OS_TID, "ts": _us(op_start), "dur": round((op_end - op_start) / 1000, 3),
                       "args": {"External id": op_ext, "Sequence number": op}})
        t = op_end + rng.randint(100, 3000)
    if everything:
        w.row("overhead", start_ns=t, end_ns=t + 1000, name="Activity Buffer Request")
        for k, data in ((1, 11248519350204), (2, 45), (3, 3006477107550000)):
            w.row("environment", start_ns=start + 500, device_id=0, environment_kind=k, data=data)
        for i in range(3):
            w.row("pm_sampling", start_ns=start + 10000 * (i + 1), device_id=0,
                  **{"sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 50.0 + i,
                     "lts__t_bytes.sum": float(1 << (20 + i))})
    doc = {"columns": w.columns}
    if everything:
        doc["thread_resource_map"] = {str(PID): {str(RAW_TID - (1 << 32)): OS_TID}}
        doc["graph_deps"] = {str(k): v for k, v in graph_deps.items()}
        doc["graph_event_record_events"] = {str(k): v for k, v in graph_events.items()}
        doc["user_annotations"] = {str(k): v for k, v in user_annotations.items()}
        # producer widths the writer must widen: a uint32 channel with CUPTI's invalid marker
        doc["dtypes"] = {"kernel": {"channel": "uint32", "grid_x": "int32", "priority": "int8"}}
    cpu = {"schemaVersion": 1, "baseTimeNanoseconds": BASE_NS, "traceEvents": events,
           "displayTimeUnit": "ms"}
    return doc, cpu


def main(seed_dir, out_dir):
    sys.path.insert(0, seed_dir)
    import oracle  # noqa: E402  the reference's loader of WINDOW.json

    from tracesql_window import write_window

    examples = os.path.join(seed_dir, "examples")
    with open(os.path.join(examples, "tiny_window.json")) as f:
        tiny = json.load(f)
    with open(os.path.join(examples, "tiny_cpu_trace.json")) as f:
        tiny_cpu = json.load(f)
    cases = [("tiny", tiny, os.path.join(examples, "tiny_cpu_trace.json"), tiny_cpu)]
    for name, seed, ops, everything in (("py_all_s1", 1, 400, True), ("py_all_s2", 2, 1500, True),
                                        ("py_bare_s3", 3, 300, False)):
        doc, cpu = synth(seed, ops, everything)
        cases.append((name, doc, cpu, cpu))
    os.makedirs(out_dir, exist_ok=True)
    for name, doc, cpu_arg, cpu_doc in cases:
        with open(os.path.join(out_dir, f"{name}.window.json"), "w") as f:
            json.dump(doc, f)
        with open(os.path.join(out_dir, f"{name}.cpu.json"), "w") as f:
            json.dump(cpu_doc, f)
        window = oracle.window_from_json_obj(doc)  # the in-memory window the oracle exports
        write_window(window, cpu_arg, os.path.join(out_dir, name, "window_id=000001"))
        print(name)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
