"""Compare a .pftrace with the reference's pre-encoding content (the oracle's "pftrace IR").

Usage: compare.py IR.json[.gz] TRACE.pftrace

The trace is decoded with the official classes of the PyPI `perfetto` package (plus the three
fields it lacks, registered at runtime: TrackEvent 3000, InternedData 1000/1001; spec §5).
The IR is lowered to the same content with the native encoder's rules (spec §2-3): spread JSON
with sorted keys, skip-zero extras, counter values typed. Both sides become plain lists --
tracks, slices (BEGIN with name, category, annotations, gpu_correlation; END), render stages
(lane and stage by name, waits, kernel, launch, extra_data), counters -- compared in order.
Exit 0 when equal, 1 with the first differences otherwise.
"""

import gzip
import json
import math
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb


def _extensions():
    fd = descriptor_pb2.FileDescriptorProto(
        name="tracesql_gpu_ext.proto",
        package="perfetto.protos",
        dependency=[pb.DESCRIPTOR.name],
        syntax="proto2",
    )
    m = fd.message_type.add(name="GpuCorrelation")
    for num, name in ((1, "render_stage_submission_event_ids"), (2, "render_stage_wait_event_ids")):
        m.field.add(name=name, number=num, type=4, label=3)  # uint64, repeated
    for name, num, extendee, typ, type_name, label in (
        ("gpu_correlation", 3000, ".perfetto.protos.TrackEvent", 11, ".perfetto.protos.GpuCorrelation", 1),
        ("compute_kernels", 1000, ".perfetto.protos.InternedData", 11, ".perfetto.protos.InternedComputeKernel", 3),
        ("compute_arg_names", 1001, ".perfetto.protos.InternedData", 11, ".perfetto.protos.InternedComputeArgName", 3),
    ):
        fd.extension.add(name=name, number=num, extendee=extendee, type=typ, type_name=type_name, label=label)
    pool = descriptor_pool.Default()
    fdesc = pool.Add(fd)
    fdesc = pool.FindFileByName(fd.name)
    return {
        "gpu_correlation": fdesc.extensions_by_name["gpu_correlation"],
        "compute_kernels": fdesc.extensions_by_name["compute_kernels"],
        "compute_arg_names": fdesc.extensions_by_name["compute_arg_names"],
    }


def _ann(a):
    """A DebugAnnotation as [name, kind, value]."""
    which = None
    for f in ("bool_value", "int_value", "double_value", "string_value"):
        if a.HasField(f):
            which = f
    if which is not None:
        v = getattr(a, which)
        return [a.name, which, _num(v)]
    if len(a.dict_entries):
        return [a.name, "dict", [_ann(x) for x in a.dict_entries]]
    if len(a.array_values):
        return [a.name, "array", [_ann(x) for x in a.array_values]]
    return [a.name, "empty", None]


def _num(v):
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    return v


def from_trace(path):
    ext = _extensions()
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    trace = pb.Trace.FromString(raw)
    out = {"clock": None, "tracks": [], "slices": [], "render": [], "counters": {}}
    names, cats, specs, ctxs, kernels, argn, descs = {}, {}, {}, {}, {}, {}, {}
    samples = []
    for p in trace.packet:
        if p.HasField("clock_snapshot"):
            out["clock"] = [p.timestamp, [[c.clock_id, c.timestamp] for c in p.clock_snapshot.clocks]]
        elif p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.HasField("process"):
                out["tracks"].append([d.uuid, d.parent_uuid, True, d.process.pid, 0, d.process.process_name])
            else:
                out["tracks"].append([d.uuid, d.parent_uuid, False, d.thread.pid, d.thread.tid, d.thread.thread_name])
        elif p.HasField("interned_data"):
            i = p.interned_data
            names.update({x.iid: x.name for x in i.event_names})
            cats.update({x.iid: x.name for x in i.event_categories})
            specs.update({x.iid: [x.name, x.category] for x in i.gpu_specifications})
            ctxs.update({x.iid: x.pid for x in i.graphics_contexts})
            kernels.update({x.iid: x.demangled_name for x in i.Extensions[ext["compute_kernels"]]})
            argn.update({x.iid: x.name for x in i.Extensions[ext["compute_arg_names"]]})
            for d in i.gpu_counter_descriptors:
                cd = d.counter_descriptor
                descs[d.iid] = [
                    d.gpu_id,
                    [[s.counter_id, s.name] for s in cd.specs],
                    [[g.group_id, list(g.counter_ids)] for g in cd.counter_groups],
                ]
        elif p.HasField("track_event"):
            e = p.track_event
            if e.type == 1:
                corr = list(e.Extensions[ext["gpu_correlation"]].render_stage_submission_event_ids)
                out["slices"].append([
                    "B", p.timestamp, e.track_uuid, names[e.name_iid],
                    [cats[c] for c in e.category_iids], corr,
                    [_ann(a) for a in e.debug_annotations],
                ])
            else:
                out["slices"].append(["E", p.timestamp, e.track_uuid])
        elif p.HasField("gpu_render_stage_event"):
            r = p.gpu_render_stage_event
            row = {
                "ts": p.timestamp, "dur": r.duration, "event_id": r.event_id, "gpu": r.gpu_id,
                "lane": specs[r.hw_queue_iid], "stage": specs[r.stage_iid],
                "context_pid": ctxs[r.context],
                "name": names[r.name_iid] if r.HasField("name_iid") else None,
                "waits": list(r.event_wait_ids),
                "kernel": kernels[r.kernel_iid] if r.HasField("kernel_iid") else None,
                "launch": None,
                "extra": [[x.name, x.value] for x in r.extra_data],
            }
            if r.HasField("launch"):
                l = r.launch
                row["launch"] = [
                    [l.grid_size.x, l.grid_size.y, l.grid_size.z],
                    [l.workgroup_size.x, l.workgroup_size.y, l.workgroup_size.z],
                    [[argn[a.name_iid], a.uint_value] for a in l.args],
                ]
            out["render"].append(row)
        elif p.HasField("gpu_counter_event"):
            g = p.gpu_counter_event
            gpu = descs[g.counter_descriptor_iid][0]
            for c in g.counters:
                kind = "i" if c.HasField("int_value") else "d"
                samples.append([p.timestamp, gpu, c.counter_id, kind, _num(c.int_value if kind == "i" else c.double_value)])
    by_gpu = {v[0]: [v[1], v[2]] for v in descs.values()}
    out["counters"] = {"descriptors": {str(k): by_gpu[k] for k in sorted(by_gpu)}, "samples": samples}
    return out


# ---- the IR, lowered with the native encoder's rules ----

def _leaf(name, v):
    if isinstance(v, bool):
        return [name, "bool_value", v]
    if isinstance(v, int):
        return [name, "int_value", v]
    if isinstance(v, float):
        return [name, "double_value", _num(v)]
    if isinstance(v, str):
        return [name, "string_value", v]
    if v is None:
        return [name, "string_value", "null"]
    if isinstance(v, dict):
        return [name, "dict", [_leaf(k, v[k]) for k in sorted(v)]]
    if isinstance(v, list):
        return [name, "array", [_leaf("", x) for x in v]]
    raise TypeError(type(v))


def _spread_annotations(blob):
    try:
        v = json.loads(blob)
    except ValueError:
        return [["annotation", "string_value", blob]]
    if isinstance(v, dict):
        return [_leaf(k, v[k]) for k in sorted(v)]
    if isinstance(v, list):
        return [["annotation", "string_value", json.dumps(v, separators=(",", ":"))]]
    return [_leaf("annotation", v)]


def _spread_extra(blob):
    try:
        v = json.loads(blob)
    except ValueError:
        return [["metadata", blob]]
    if not isinstance(v, dict):
        return [["metadata", blob]]
    return [[k, v[k] if isinstance(v[k], str) else json.dumps(v[k], separators=(",", ":"), sort_keys=True, ensure_ascii=False)] for k in sorted(v)]


def _bytes(b):
    if isinstance(b, dict):
        return b["__bytes_latin1__"].encode("latin1")
    return b.encode() if isinstance(b, str) else bytes(b)


def _csr_text(csr, i):
    offsets, buf = csr
    buf = _bytes(buf)
    s = buf[offsets[i]:offsets[i + 1]]
    return s.decode() if s else None


def from_ir(ir):
    a = dict(zip(ir["arg_names"], ir["args"]))
    base = a["base_ns"]
    out = {"clock": [base, [[6, base], [1, base]]], "tracks": [], "slices": [], "render": [], "counters": {}}
    for uuid, parent, is_proc, pid, tid, name in a["tracks"]:
        out["tracks"].append([uuid, parent, is_proc, pid, 0 if is_proc else tid, name])
    names, cats = a["name_table"], a["cat_table"]
    for g in a["group_tuples"]:
        ts, end, uu, nid, ints, strs, arrs, jsons, flow, gpu_corr, cat_ids = g
        assert not arrs and flow is None, "array annotations / flows are not modelled"
        for i in range(len(ts)):
            anns = []
            for key, vals, skip_zero, present in ints:
                if skip_zero and vals[i] == 0:
                    continue
                if present is not None and not present[i]:
                    continue
                anns.append([key, "int_value", vals[i]])
            for key, idx, table in strs:
                anns.append([key, "string_value", table[idx[i]]])
            for csr in jsons:
                blob = _csr_text(csr, i)
                if blob:
                    anns += _spread_annotations(blob)
            corr = []
            if gpu_corr is not None:
                off, ids = gpu_corr
                corr = list(ids[off[i]:off[i + 1]])
            cat = [cats[cat_ids[i] - 1]] if cat_ids is not None and cat_ids[i] else []
            out["slices"].append(["B", ts[i], uu[i], names[nid[i] - 1], cat, corr, anns])
        for i in range(len(ts)):
            out["slices"].append(["E", end[i], uu[i]])
    render = a["render"]
    if render is not None:
        specs_l, gfx, cols, extra, launch, tables, const, meta = render
        specs = {iid: [name, cat] for iid, name, cat in specs_l}
        ctxs = {iid: pid for iid, pid in gfx}
        ts, dur, eid, gpu, hw, stage, ctx, name_iid, (woff, wids) = cols
        gx, gy, gz, bx, by, bz, kernel_iid, args = launch
        kernels = {iid: n for iid, n in tables[0]}
        argn = {iid: n for iid, n in tables[1]}
        for i in range(len(ts)):
            row = {
                "ts": ts[i], "dur": dur[i], "event_id": eid[i], "gpu": gpu[i],
                "lane": specs[hw[i]], "stage": specs[stage[i]], "context_pid": ctxs[ctx[i]],
                "name": names[name_iid[i] - 1] if name_iid[i] else None,
                "waits": list(wids[woff[i]:woff[i + 1]]),
                "kernel": None, "launch": None, "extra": [],
            }
            if gx[i] > 0:
                row["kernel"] = kernels[kernel_iid[i]] if kernel_iid[i] else None
                row["launch"] = [[gx[i], gy[i], gz[i]], [bx[i], by[i], bz[i]],
                                 [[argn[iid], vals[i]] for iid, vals, _s in args if vals[i] != 0]]
            for key, vals, skip_zero in extra:
                if skip_zero and vals[i] == 0:
                    continue
                row["extra"].append([key, str(vals[i])])
            row["extra"] += [[k, v] for k, v in const]
            blob = _csr_text(meta, i)
            if blob:
                row["extra"] += _spread_extra(blob)
            out["render"].append(row)
    counters = a["counters"]
    descs, samples = {}, []
    if counters is not None:
        specs, gpu, ts, cid, val, compute, int_ids = counters
        int_ids = set(int_ids)
        groups = [[6, list(compute)]] if compute else []
        for g in sorted(set(gpu)):
            descs[str(g)] = [[list(s) for s in specs], groups]
        for i in range(len(ts)):
            if cid[i] in int_ids:
                v = val[i]
                samples.append([ts[i], gpu[i], cid[i], "i", int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)])
            else:
                samples.append([ts[i], gpu[i], cid[i], "d", _num(float(val[i]))])
    out["counters"] = {"descriptors": descs, "samples": samples}
    return out


def _load_ir(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def diff(ours, ref):
    problems = []
    if ours["clock"] != ref["clock"]:
        problems.append(f"clock: {ours['clock']} != {ref['clock']}")
    for section in ("tracks", "slices", "render"):
        a, b = ours[section], ref[section]
        if len(a) != len(b):
            problems.append(f"{section}: {len(a)} ours vs {len(b)} reference")
        bad = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
        for i in bad[:3]:
            problems.append(f"{section}[{i}]:\n  ours {json.dumps(a[i])}\n  ref  {json.dumps(b[i])}")
        if bad:
            problems.append(f"{section}: {len(bad)} of {min(len(a), len(b))} differ")
    ca, cb = ours["counters"], ref["counters"]
    if ca["descriptors"] != cb["descriptors"]:
        problems.append(f"counter descriptors: {json.dumps(ca['descriptors'])} != {json.dumps(cb['descriptors'])}")
    sa, sb = ca["samples"], cb["samples"]
    if len(sa) != len(sb):
        problems.append(f"counter samples: {len(sa)} ours vs {len(sb)} reference")
    bad = [i for i in range(min(len(sa), len(sb))) if sa[i] != sb[i]]
    for i in bad[:3]:
        problems.append(f"counter sample {i}: ours {sa[i]} ref {sb[i]}")
    if bad:
        problems.append(f"counter samples: {len(bad)} differ")
    return problems


def main():
    ir_path, trace_path = sys.argv[1], sys.argv[2]
    ours, ref = from_trace(trace_path), from_ir(_load_ir(ir_path))
    problems = diff(ours, ref)
    counts = {k: len(ours[k]) for k in ("tracks", "slices", "render")}
    counts["counter samples"] = len(ours["counters"]["samples"])
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("equal:", json.dumps(counts))


if __name__ == "__main__":
    main()
