"""The columns of the window format, version 1 (docs/window-format.md, "Tables").

Each kind maps its canonical columns to (type, required). Types: "i64", "u64", "i32", "f64",
"str"; `annotation` is "json" (the JSON text of the producer's value). Required columns must
exist in a kind that has rows; any column may hold nulls.
"""

SCHEMA_VERSION = "1"

REQ, OPT = True, False

_GPU_COMMON = {
    "start_ns": ("i64", REQ),
    "end_ns": ("i64", REQ),
    "device_id": ("i64", REQ),
    "context_id": ("i64", REQ),
    "stream_id": ("i64", REQ),
    "correlation_id": ("i64", REQ),
    "graph_node_id": ("i64", REQ),
    "graph_id": ("i64", REQ),
    "annotation": ("json", REQ),
}
_LANES = {"logical_lane": ("i64", OPT), "lane_name": ("str", OPT)}
_CHANNEL = {"channel": ("i64", REQ), "channel_type": ("i64", REQ)}
_API = {
    "cbid": ("i64", REQ),
    "start_ns": ("i64", REQ),
    "end_ns": ("i64", REQ),
    "process_id": ("i64", REQ),
    "thread_id": ("i64", REQ),
    "correlation_id": ("i64", REQ),
    "name": ("str", OPT),
}

# Activity kinds in the format's order; `pm_sampling` takes any number of Float64 metrics.
ACTIVITY_KINDS = {
    "kernel": {
        **_GPU_COMMON,
        "name": ("str", REQ),
        **{c: ("i64", REQ) for c in ("grid_x", "grid_y", "grid_z", "block_x", "block_y")},
        "block_z": ("i64", REQ),
        "registers_per_thread": ("i64", REQ),
        "static_shared_memory": ("i64", REQ),
        "dynamic_shared_memory": ("i64", REQ),
        "priority": ("i64", REQ),
        "queued": ("i64", REQ),
        **_CHANNEL,
        "metadata": ("str", OPT),
        **_LANES,
    },
    "gpu_memcpy": {
        **_GPU_COMMON,
        **{c: ("i64", REQ) for c in ("bytes", "copy_kind", "src_kind", "dst_kind", "flags")},
        **_CHANNEL,
        "metadata": ("str", OPT),
        **_LANES,
        "src_device_id": ("i64", OPT),
        "dst_device_id": ("i64", OPT),
    },
    "gpu_memset": {
        **_GPU_COMMON,
        **{c: ("i64", REQ) for c in ("bytes", "value", "memory_kind", "flags")},
        **_CHANNEL,
        "metadata": ("str", OPT),
        **_LANES,
    },
    "graph_host_node": {
        **_GPU_COMMON,
        "process_id": ("i64", REQ),
        "thread_id": ("i64", REQ),
        "host_fn": ("str", OPT),
        "host_fn_addr": ("i64", OPT),
        **_LANES,
    },
    "graph_event_node": {**_GPU_COMMON, **_LANES},
    "cuda_runtime": _API,
    "cuda_driver": _API,
    "overhead": {
        "start_ns": ("i64", REQ),
        "end_ns": ("i64", REQ),
        "correlation_id": ("i64", OPT),
        "name": ("str", REQ),
        "overhead_kind": ("i64", OPT),
    },
    "cuda_sync": {
        c: ("i64", REQ)
        for c in (
            "sync_type",
            "start_ns",
            "end_ns",
            "context_id",
            "stream_id",
            "correlation_id",
            "cuda_event_id",
            "cuda_event_sync_id",
        )
    },
    "cuda_event": {
        "cuda_event_sync_id": ("i64", REQ),
        "correlation_id": ("i64", REQ),
        "device_id": ("i64", REQ),
        "context_id": ("i64", REQ),
        **{
            c: ("i64", OPT)
            for c in ("stream_id", "event_id", "cuda_event_id", "start_ns", "end_ns", "graph_node_id")
        },
        "annotation": ("json", OPT),
    },
    "external_correlation": {
        "external_kind": ("i64", OPT),
        "external_id": ("i64", REQ),
        "correlation_id": ("i64", REQ),
        "user_external_id": ("i64", OPT),
    },
    "environment": {
        "start_ns": ("i64", REQ),
        "device_id": ("i64", REQ),
        "environment_kind": ("i64", REQ),
        "data": ("u64", REQ),
    },
    "pm_sampling": {"start_ns": ("i64", REQ), "device_id": ("i64", REQ)},
}

# Kinds whose columns other than the canonical ones must be numbers (read as Float64).
METRIC_KINDS = {"pm_sampling"}

SIDE_TABLES = ("user_annotation", "thread_resource", "graph_deps", "graph_event_record", "window_info")


def is_time_column(name):
    """Integer columns that carry field metadata unit=ns, clock=unix."""
    return name.endswith("_ns") or name == "queued"
