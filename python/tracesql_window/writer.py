"""write_window: an in-memory trace window -> a window folder, atomically.

Every column is converted and checked first; only a window that passes is written, into a
temporary folder beside `out_dir` that is renamed to `out_dir` when complete. A window that
breaks the format is a ValueError naming the kind and the column, and nothing is written.
"""

import gzip
import json
import os
import re
import shutil
import tempfile

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .schema import ACTIVITY_KINDS, METRIC_KINDS, SCHEMA_VERSION, SIDE_TABLES, is_time_column

PRODUCER = "tracesql_window"
CPU_TRACE_FILE = "cpu_trace.json.gz"

_CONTRACT = {"i64": "Int64", "u64": "UInt64", "i32": "Int32", "f64": "Float64", "str": "Utf8"}
_ARROW = {"i64": pa.int64(), "u64": pa.uint64(), "i32": pa.int32(), "f64": pa.float64()}
_NS_META = {b"unit": b"ns", b"clock": b"unix"}
# The order claimed for a GPU activity table whose rows come in time order per stream
# (src/window/row_order.rs): the engine then skips sorting them by stream and time.
_ROW_ORDER = "device_id,context_id,stream_id;start_ns,end_ns"
_WINDOW_DIR = re.compile(r"^window_id=(\d+)$")
_BASE_NS = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(-?\d+)')


def _fail(kind, column, what):
    return ValueError(f"{kind}: column `{column}` {what}")


def _first_line(e):
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _type_name(values, arr):
    dtype = getattr(values, "dtype", None)
    return str(dtype) if dtype is not None and str(dtype) != "object" else str(arr.type)


def _json_default(value):
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return item()
    tolist = getattr(value, "tolist", None)  # numpy arrays
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _json_column(kind, name, values):
    """`annotation`: the JSON text of each value, null for None. One annotation object is
    usually shared by every replay of its node, so texts are cached by identity."""
    cache = {}
    out = []
    for v in values.tolist() if hasattr(values, "tolist") else values:
        if v is None:
            out.append(None)
            continue
        text = cache.get(id(v))
        if text is None:
            try:
                text = json.dumps(v, ensure_ascii=False, default=_json_default)
            except (TypeError, ValueError) as e:
                raise _fail(kind, name, f"holds a value that is not JSON ({_first_line(e)})")
            cache[id(v)] = text
        out.append(text)
    return pa.array(out, type=pa.string())


def _infer(kind, name, values):
    """Any 1-D array or sequence -> an Arrow array of the type its values have."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if getattr(values, "ndim", 1) != 1:
        raise _fail(kind, name, f"is not 1-D (shape {getattr(values, 'shape', '?')})")
    try:
        return pa.array(values)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise _fail(kind, name, f"holds values of mixed or unsupported types ({_first_line(e)})")


def _convert(kind, name, values, ty):
    """One column -> its Arrow array in the format's type, or ValueError naming it."""
    if ty == "json":
        return _json_column(kind, name, values)
    arr = _infer(kind, name, values)
    t = arr.type
    if pa.types.is_null(t):  # every value None
        return pa.nulls(len(arr), pa.string() if ty == "str" else _ARROW[ty])
    if ty == "str":
        if pa.types.is_dictionary(t) and pa.types.is_string(t.value_type):
            return arr.cast(pa.string())
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return arr.cast(pa.string())
        raise _fail(kind, name, f"has type {_type_name(values, arr)}, expected Utf8 (str)")
    ok = pa.types.is_integer(t) or (ty == "f64" and pa.types.is_floating(t))
    if not ok:
        want = "numbers" if ty == "f64" else "integers"
        raise _fail(
            kind, name, f"has type {_type_name(values, arr)}, expected {_CONTRACT[ty]} ({want})"
        )
    try:
        return arr.cast(_ARROW[ty], safe=True)
    except pa.ArrowInvalid as e:
        raise _fail(kind, name, f"has values outside {_CONTRACT[ty]} ({_first_line(e)})")


def _extra(kind, name, values):
    """A column the format does not list: kept in the type its values have."""
    arr = _infer(kind, name, values)
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.string())
    if pa.types.is_large_string(arr.type):
        return arr.cast(pa.string())
    return arr


def _activity_table(kind, cols):
    """The checked arrays of one kind, in the window's column order; None without rows."""
    spec = ACTIVITY_KINDS.get(kind)
    if spec is None:
        known = ", ".join(ACTIVITY_KINDS)
        raise ValueError(f"{kind}: not an activity kind of the window format (kinds: {known})")
    if not cols:
        return None
    names = list(cols)
    n = len(cols[names[0]])
    if n == 0:
        return None  # the exporter's test for an absent kind: the first column is empty
    for column, (ty, required) in spec.items():
        if required and column not in cols:
            want = "Utf8, JSON text" if ty == "json" else _CONTRACT[ty]
            raise _fail(kind, column, f"is missing (required, expected {want})")
    arrays = []
    for name in names:
        values = cols[name]
        if len(values) != n:
            raise _fail(kind, name, f"has {len(values)} rows, expected {n} (as `{names[0]}`)")
        if name in spec:
            arrays.append(_convert(kind, name, values, spec[name][0]))
        elif kind in METRIC_KINDS:
            arrays.append(_convert(kind, name, values, "f64"))
        else:
            arrays.append(_extra(kind, name, values))
    return names, arrays


def _int(table, column, value):
    if isinstance(value, bool):
        raise _fail(table, column, f"holds {value!r}, expected an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise _fail(table, column, f"holds {value!r}, expected an integer") from None


def _side_tables(window):
    """The four side tables of the window dict as (name, column names, arrays)."""
    out = []
    ua = window.get("user_annotations") or {}
    names = []
    for v in ua.values():
        if v is not None and not isinstance(v, str):
            raise _fail("user_annotation", "name", f"holds {v!r}, expected str")
        names.append(v)
    out.append(
        (
            "user_annotation",
            ["external_id", "name"],
            [
                pa.array([_int("user_annotation", "external_id", k) for k in ua], pa.int64()),
                pa.array(names, pa.string()),
            ],
        )
    )

    pids, tids, rids = [], [], []
    for pid, threads in (window.get("thread_resource_map") or {}).items():
        for tid, rid in (threads or {}).items():
            pids.append(_int("thread_resource", "process_id", pid))
            tids.append(_int("thread_resource", "thread_id", tid))
            rids.append(_int("thread_resource", "resource_id", rid))
    out.append(
        (
            "thread_resource",
            ["process_id", "thread_id", "resource_id"],
            [pa.array(x, pa.int64()) for x in (pids, tids, rids)],
        )
    )

    node, pred, pred_ord, node_ord = [], [], [], []
    for i, (k, preds) in enumerate((window.get("graph_deps") or {}).items()):
        k = _int("graph_deps", "node_id", k)
        preds = list(preds or [])
        if not preds:  # the key still matters to the exporter: one row, no predecessor
            node.append(k)
            pred.append(None)
            pred_ord.append(None)
            node_ord.append(i)
        for j, p in enumerate(preds):
            node.append(k)
            pred.append(_int("graph_deps", "pred_node_id", p))
            pred_ord.append(j)
            node_ord.append(i)
    out.append(
        (
            "graph_deps",
            ["node_id", "pred_node_id", "pred_ordinal", "node_ordinal"],
            [
                pa.array(node, pa.int64()),
                pa.array(pred, pa.int64()),
                pa.array(pred_ord, pa.int32()),
                pa.array(node_ord, pa.int32()),
            ],
        )
    )

    ger = window.get("graph_event_record_events") or {}
    handles = [_int("graph_event_record", "cuda_event", v) for v in ger.values()]
    if any(h < 0 or h >= 1 << 64 for h in handles):
        raise _fail("graph_event_record", "cuda_event", "has values outside UInt64")
    out.append(
        (
            "graph_event_record",
            ["graph_node_id", "cuda_event"],
            [
                pa.array([_int("graph_event_record", "graph_node_id", k) for k in ger], pa.int64()),
                pa.array(handles, pa.uint64()),
            ],
        )
    )
    return [t for t in out if len(t[2][0])]


def _cpu_trace_gz(cpu_trace):
    """(gzip bytes, or a .gz path to copy as it is) of a dict, bytes or path."""
    if isinstance(cpu_trace, dict):
        if not isinstance(cpu_trace.get("traceEvents"), list):
            raise ValueError("cpu_trace: the Kineto trace has no `traceEvents` list")
        raw = json.dumps(cpu_trace, separators=(",", ":"), ensure_ascii=False).encode()
        return gzip.compress(raw, compresslevel=6, mtime=0), None
    if isinstance(cpu_trace, (bytes, bytearray, memoryview)):
        data = bytes(cpu_trace)
        return (data if data[:2] == b"\x1f\x8b" else gzip.compress(data, 6, mtime=0)), None
    path = os.fspath(cpu_trace)
    with open(path, "rb") as f:
        if f.read(2) == b"\x1f\x8b":
            return None, path
        f.seek(0)
        return gzip.compress(f.read(), compresslevel=6, mtime=0), None


def _base_ns(gz_path):
    with gzip.open(gz_path, "rb") as f:
        raw = f.read()
    hits = _BASE_NS.findall(raw)
    if len(hits) == 1:
        return int(hits[0])
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    value = doc.get("baseTimeNanoseconds") if isinstance(doc, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _write_parquet(path, kind, window_id, names, arrays):
    fields = [
        pa.field(
            n,
            a.type,
            nullable=True,
            metadata=_NS_META if is_time_column(n) and pa.types.is_integer(a.type) else None,
        )
        for n, a in zip(names, arrays)
    ]
    meta = {
        b"tracesql.schema_version": SCHEMA_VERSION.encode(),
        b"tracesql.kind": kind.encode(),
        b"tracesql.window_id": str(window_id).encode(),
    }
    if _in_time_order_per_stream(names, arrays):
        meta[b"tracesql.row_order"] = _ROW_ORDER.encode()
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))
    text = [n for n, a in zip(names, arrays) if pa.types.is_string(a.type)]
    pq.write_table(
        table, path, compression="zstd", use_dictionary=text or False, row_group_size=1 << 20
    )


def _in_time_order_per_stream(names, arrays):
    """Whether each stream's rows come in (start_ns, end_ns) order, nulls last, as written."""
    groups, times = (part.split(",") for part in _ROW_ORDER.split(";"))
    columns = dict(zip(names, arrays))
    if not all(n in columns and pa.types.is_int64(columns[n].type) for n in groups + times):
        return False
    n = len(columns["start_ns"])
    table = pa.table({c: columns[c] for c in groups + times}).append_column("row", pa.array(range(n)))
    # each stream's rows together, in the order they were written
    table = table.sort_by([(c, "ascending") for c in groups + ["row"]]).combine_chunks()

    def pairs(values):  # (each row, the row before it)
        return values.slice(1), values.slice(0, max(n - 1, 0))

    same = pa.array([True] * max(n - 1, 0), pa.bool_())
    for c in groups:
        now, before = pairs(table[c].fill_null(-(2**63)))
        valid_now, valid_before = pairs(pc.is_valid(table[c]))
        same = pc.and_(same, pc.and_(pc.equal(now, before), pc.equal(valid_now, valid_before)))
    # a null time sorts after every value
    (start, start_before), (end, end_before) = (pairs(table[c].fill_null(2**63 - 1)) for c in times)
    back = pc.or_(
        pc.less(start, start_before),
        pc.and_(pc.equal(start, start_before), pc.less(end, end_before)),
    )
    return not pc.any(pc.and_(same, back)).as_py()


def write_window(
    trace_window,
    cpu_trace,
    out_dir,
    *,
    window_id=None,
    boundary_ns=None,
    cupti_version=None,
    cbid_table_version=None,
):
    """Write `trace_window` and the Kineto CPU trace as the window folder `out_dir`.

    trace_window: the reference exporter's dict: "columns" ({kind: {column: 1-D array}},
    numpy arrays or sequences), "user_annotations", "thread_resource_map", "graph_deps",
    "graph_event_record_events", "start_ns". cpu_trace: the Kineto trace as a dict, a path
    (a gzipped file is copied byte for byte, a plain one gzipped) or bytes; None for none.
    window_id defaults to the number in a `window_id=NNNNNN` folder name, else 0.

    Raises ValueError naming the kind and column when the window breaks the format, and
    FileExistsError when out_dir exists (windows are immutable); nothing is written then.
    Returns out_dir.
    """
    out_dir = os.fspath(out_dir)
    if window_id is None:
        m = _WINDOW_DIR.match(os.path.basename(os.path.normpath(out_dir)))
        window_id = int(m.group(1)) if m else 0
    columns = trace_window.get("columns") or {}
    tables = []
    for kind, cols in columns.items():
        if kind in SIDE_TABLES:
            raise ValueError(f"{kind}: an activity kind may not take a side table's name")
        checked = _activity_table(kind, cols)
        if checked is not None:
            tables.append((kind, *checked))
    tables.extend(_side_tables(trace_window))
    start_ns = trace_window.get("start_ns")
    start_ns = None if start_ns is None else _int("window_info", "start_ns", start_ns)
    cpu = None if cpu_trace is None else _cpu_trace_gz(cpu_trace)

    if os.path.lexists(out_dir):
        raise FileExistsError(f"{out_dir}: already exists (a window is written once)")
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    # A dot-name ending in .tmp: archive readers skip it while it is being written.
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out_dir))}.", suffix=".tmp", dir=parent)
    try:
        for kind, names, arrays in tables:
            _write_parquet(os.path.join(tmp, f"{kind}.parquet"), kind, window_id, names, arrays)
        base_ns = None
        if cpu is not None:
            data, src = cpu
            target = os.path.join(tmp, CPU_TRACE_FILE)
            if src is not None:
                shutil.copyfile(src, target)
            else:
                with open(target, "wb") as f:
                    f.write(data)
            base_ns = _base_ns(target)
        info = [
            ("window_id", pa.array([window_id], pa.int64())),
            ("start_ns", pa.array([start_ns], pa.int64())),
            ("boundary_ns", pa.array([boundary_ns], pa.int64())),
            ("base_ns", pa.array([base_ns], pa.int64())),
            ("schema_version", pa.array([SCHEMA_VERSION], pa.string())),
            ("producer", pa.array([PRODUCER], pa.string())),
            ("cupti_version", pa.array([cupti_version], pa.int64())),
            ("cbid_table_version", pa.array([cbid_table_version], pa.string())),
        ]
        _write_parquet(
            os.path.join(tmp, "window_info.parquet"),
            "window_info",
            window_id,
            [n for n, _ in info],
            [a for _, a in info],
        )
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
