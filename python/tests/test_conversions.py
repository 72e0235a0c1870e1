"""Results in pandas and polars keep what the window holds: ns timestamps far past 2^53
(float64 would round them) and UTF-8 kernel names, exactly."""

import pyarrow as pa
import pytest

import tracesql

NAMES = ["gemm_кернел_💥", "reduce<float, 256>", "归约内核", "plain"]
STARTS = [1_733_000_000_123_456_789 + i * 1_001 for i in range(len(NAMES))]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A window of four kernels and their launches, written by tracesql.write_window."""
    n = len(NAMES)
    ints = lambda v: [v] * n  # noqa: E731
    kernel = {
        "start_ns": STARTS,
        "end_ns": [s + 777 for s in STARTS],
        "device_id": ints(0),
        "context_id": ints(1),
        "stream_id": ints(7),
        "correlation_id": list(range(1, n + 1)),
        "name": NAMES,
    }
    for column in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"):
        kernel[column] = ints(1)
    for column in (
        "registers_per_thread",
        "static_shared_memory",
        "dynamic_shared_memory",
        "priority",
        "queued",
        "channel",
        "channel_type",
        "graph_id",
        "graph_node_id",
    ):
        kernel[column] = ints(0)
    kernel["annotation"] = ints(None)
    runtime = {
        "start_ns": [s - 5_000 for s in STARTS],
        "end_ns": [s - 4_000 for s in STARTS],
        "cbid": ints(211),
        "process_id": ints(100),
        "thread_id": ints(100),
        "correlation_id": list(range(1, n + 1)),
    }
    out = tmp_path_factory.mktemp("utf8") / "window_id=000001"
    tracesql.write_window({"columns": {"kernel": kernel, "cuda_runtime": runtime}}, None, out)
    return out


def test_pandas_keeps_ns_and_names(written):
    df = tracesql.open(written).sql("select name, start_ns from kernel order by start_ns").to_pandas()
    assert str(df["start_ns"].dtype) == "int64"
    assert df["start_ns"].tolist() == STARTS
    assert df["name"].tolist() == NAMES


def test_polars_keeps_ns_and_names(written):
    import polars

    df = tracesql.open(written).sql("select name, start_ns from kernel order by start_ns").to_polars()
    assert df.schema["start_ns"] == polars.Int64
    assert df["start_ns"].to_list() == STARTS
    assert df["name"].to_list() == NAMES


def test_timestamps_convert_to_datetime_without_loss(written):
    table = tracesql.open(written).sql(
        "select name, to_timestamp_nanos(start_ns) as start from kernel order by start_ns"
    ).to_arrow()
    assert table.schema.field("start").type == pa.timestamp("ns")
    df = table.to_pandas()
    assert [t.value for t in df["start"]] == STARTS


def test_the_window_writer_is_in_the_package():
    import tracesql_window

    assert tracesql.write_window is tracesql_window.write_window
