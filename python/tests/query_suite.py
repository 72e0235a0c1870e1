"""The query suite: plain SQL that tracesql, DuckDB and datafusion-python all run over a
window's own Parquet tables (python/tests/test_query.py checks the rows are DuckDB's;
scripts/bench-python.sh times the three)."""

# The window's tables the queries read, one Parquet file each (`<table>.parquet`).
TABLES = ("kernel", "cuda_runtime", "gpu_memcpy")

QUERIES = {
    "count": "select count(*) as n from kernel",
    "top_kernels": (
        "select name, count(*) as launches, sum(end_ns - start_ns) as ns "
        "from kernel group by name order by ns desc, name limit 20"
    ),
    "launch_join": (
        "select r.cbid, count(*) as kernels, max(k.start_ns - r.start_ns) as worst_ns "
        "from kernel k join cuda_runtime r on k.correlation_id = r.correlation_id "
        "group by r.cbid order by r.cbid"
    ),
    "per_stream": (
        "select device_id, stream_id, min(start_ns) as first_ns, max(end_ns) as last_ns "
        "from kernel group by device_id, stream_id order by device_id, stream_id"
    ),
    "copies": (
        "select copy_kind, count(*) as n, sum(bytes) as bytes from gpu_memcpy "
        "group by copy_kind order by copy_kind"
    ),
    "gaps": (
        "select stream_id, start_ns - lag(end_ns) over "
        "(partition by stream_id order by start_ns, end_ns) as gap_ns "
        "from kernel order by stream_id, start_ns, end_ns, gap_ns limit 500"
    ),
    "filter": (
        "select start_ns, end_ns, name from kernel where end_ns - start_ns > 10000 "
        "order by start_ns, end_ns, name"
    ),
}
