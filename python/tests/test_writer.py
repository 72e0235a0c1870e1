"""Unit tests of tracesql_window.write_window: python -m unittest discover -s python/tests

A window that breaks the format is a ValueError naming the kind and the column, and leaves
nothing behind; a good one has the layout, types and metadata of docs/window-format.md.
"""

import gzip
import json
import os
import tempfile
import unittest

import numpy as np
import pyarrow.parquet as pq

from tracesql_window import write_window

BASE = 1759300074000000000
CPU = {"baseTimeNanoseconds": BASE, "traceEvents": [{"ph": "X", "name": "a", "ts": 1.5, "dur": 2.0}]}


def i64(*v):
    return np.array(v, dtype=np.int64)


def objects(*v):
    a = np.empty(len(v), dtype=object)
    for i, x in enumerate(v):
        a[i] = x
    return a


def runtime(**changes):
    cols = {
        "start_ns": i64(100, 300),
        "end_ns": i64(200, 400),
        "cbid": i64(211, 311),
        "process_id": i64(7, 7),
        "thread_id": i64(1, 1),
        "correlation_id": i64(1, 2),
    }
    cols.update(changes)
    return {k: v for k, v in cols.items() if v is not None}


def kernel(n=2, **changes):
    ints = (
        "start_ns end_ns device_id context_id stream_id correlation_id graph_id graph_node_id "
        "grid_x grid_y grid_z block_x block_y block_z registers_per_thread static_shared_memory "
        "dynamic_shared_memory priority queued channel channel_type"
    ).split()
    cols = {c: np.arange(1, n + 1, dtype=np.int64) for c in ints}
    cols["name"] = objects(*["k"] * n)
    cols["annotation"] = objects(*[None] * n)
    cols.update(changes)
    return {k: v for k, v in cols.items() if v is not None}


class WriterTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.out = os.path.join(self.root, "window_id=000042")

    def tearDown(self):
        self.tmp.cleanup()

    def assert_refused(self, columns, *names, **window):
        with self.assertRaises(ValueError) as cm:
            write_window({"columns": columns, **window}, CPU, self.out)
        message = str(cm.exception)
        for name in names:
            self.assertIn(name, message)
        self.assertNotIn("\n", message)
        self.assertEqual(os.listdir(self.root), [], f"left behind after: {message}")
        return message

    def test_a_missing_required_column_names_the_kind_and_column(self):
        m = self.assert_refused({"cuda_runtime": runtime(correlation_id=None)}, "cuda_runtime", "`correlation_id`")
        self.assertIn("missing", m)
        self.assert_refused({"kernel": kernel(annotation=None)}, "kernel", "`annotation`")
        # optional columns may be left out
        write_window({"columns": {"kernel": kernel()}}, CPU, self.out)
        self.assertTrue(os.path.isdir(self.out))

    def test_a_wrong_dtype_names_the_kind_and_column(self):
        self.assert_refused({"cuda_runtime": runtime(start_ns=np.array([1.0, 2.0]))}, "cuda_runtime", "`start_ns`", "float64")
        self.assert_refused({"cuda_runtime": runtime(cbid=objects("a", "b"))}, "cuda_runtime", "`cbid`")
        self.assert_refused({"cuda_runtime": runtime(thread_id=np.array([True, False]))}, "cuda_runtime", "`thread_id`")
        self.assert_refused({"kernel": kernel(name=i64(1, 2))}, "kernel", "`name`", "Utf8")
        self.assert_refused({"kernel": kernel(metadata=objects({"a": 1}, None))}, "kernel", "`metadata`")
        self.assert_refused({"kernel": kernel(queued=objects(1, "x"))}, "kernel", "`queued`")
        big = np.array([1 << 63, 1], dtype=np.uint64)
        self.assert_refused({"cuda_runtime": runtime(correlation_id=big)}, "cuda_runtime", "`correlation_id`", "Int64")
        env = {"start_ns": i64(1), "device_id": i64(0), "environment_kind": i64(1), "data": i64(-5)}
        self.assert_refused({"environment": env}, "environment", "`data`", "UInt64")
        pm = {"start_ns": i64(1), "device_id": i64(0), "sm__x.avg": objects("high")}
        self.assert_refused({"pm_sampling": pm}, "pm_sampling", "`sm__x.avg`")
        self.assert_refused({"kernel": kernel(annotation=objects(object(), None))}, "kernel", "`annotation`")

    def test_a_refused_column_anywhere_writes_nothing_at_all(self):
        # the bad kind comes after good ones: still no file, no folder
        self.assert_refused(
            {"kernel": kernel(), "cuda_runtime": runtime(end_ns=np.array([1.5, 2.5]))}, "cuda_runtime", "`end_ns`"
        )
        self.assert_refused({"cuda_runtime": runtime(end_ns=i64(1, 2, 3))}, "cuda_runtime", "`end_ns`", "rows")
        self.assert_refused(
            {"cuda_runtime": runtime()}, "graph_deps", "pred_node_id", graph_deps={5: ["x"]}
        )
        self.assert_refused({"memory": {"bytes": i64(1)}}, "memory")

    def test_an_existing_folder_is_not_overwritten(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "keep"), "w") as f:
            f.write("x")
        with self.assertRaises(FileExistsError):
            write_window({"columns": {"cuda_runtime": runtime()}}, CPU, self.out)
        self.assertEqual(os.listdir(self.out), ["keep"])
        self.assertEqual(os.listdir(self.root), ["window_id=000042"])

    def test_a_good_window_has_the_format_layout_types_and_metadata(self):
        window = {
            "columns": {
                "kernel": kernel(
                    channel=np.array([3, 4294967295], dtype=np.uint32),
                    annotation=objects(None, "region_b"),
                    lane_name=objects(None, None),
                ),
                "cuda_runtime": runtime(),
                "gpu_memset": {},  # an empty kind: no file
            },
            "user_annotations": {1: "forward"},
            "thread_resource_map": {4242: {-1698031872: 4243}},
            "graph_deps": {12884901890: [12884901889], 12884901889: []},
            "graph_event_record_events": {12884901891: (1 << 63) + 5},
            "start_ns": BASE + 5,
        }
        cpu_path = os.path.join(self.root, "cpu.json.gz")
        with gzip.open(cpu_path, "wb") as f:
            f.write(json.dumps(CPU).encode())
        write_window(window, cpu_path, self.out)
        self.assertEqual(
            sorted(os.listdir(self.root)), ["cpu.json.gz", "window_id=000042"], "no temporary folder left"
        )
        self.assertEqual(
            sorted(os.listdir(self.out)),
            sorted(
                ["kernel.parquet", "cuda_runtime.parquet", "user_annotation.parquet", "thread_resource.parquet",
                 "graph_deps.parquet", "graph_event_record.parquet", "window_info.parquet", "cpu_trace.json.gz"]
            ),
        )
        with open(cpu_path, "rb") as a, open(os.path.join(self.out, "cpu_trace.json.gz"), "rb") as b:
            self.assertEqual(a.read(), b.read(), "a gzipped CPU trace is copied byte for byte")

        k = pq.read_table(os.path.join(self.out, "kernel.parquet"))
        self.assertEqual(str(k.schema.field("channel").type), "int64")
        self.assertEqual(k.column("channel").to_pylist(), [3, 4294967295])
        self.assertEqual(k.column("annotation").to_pylist(), [None, '"region_b"'])
        self.assertEqual(str(k.schema.field("name").type), "string")
        self.assertEqual(str(k.schema.field("lane_name").type), "string")
        self.assertEqual(k.schema.field("start_ns").metadata, {b"unit": b"ns", b"clock": b"unix"})
        self.assertEqual(k.schema.field("queued").metadata, {b"unit": b"ns", b"clock": b"unix"})
        self.assertIsNone(k.schema.field("grid_x").metadata)
        self.assertEqual(k.schema.metadata[b"tracesql.kind"], b"kernel")
        self.assertEqual(k.schema.metadata[b"tracesql.window_id"], b"42")
        self.assertEqual(k.schema.metadata[b"tracesql.schema_version"], b"1")

        deps = pq.read_table(os.path.join(self.out, "graph_deps.parquet")).to_pylist()
        self.assertEqual(
            deps,
            [
                {"node_id": 12884901890, "pred_node_id": 12884901889, "pred_ordinal": 0, "node_ordinal": 0},
                {"node_id": 12884901889, "pred_node_id": None, "pred_ordinal": None, "node_ordinal": 1},
            ],
        )
        ger = pq.read_table(os.path.join(self.out, "graph_event_record.parquet"))
        self.assertEqual(str(ger.schema.field("cuda_event").type), "uint64")
        self.assertEqual(ger.column("cuda_event").to_pylist(), [(1 << 63) + 5])
        info = pq.read_table(os.path.join(self.out, "window_info.parquet")).to_pylist()[0]
        self.assertEqual(info["window_id"], 42)
        self.assertEqual(info["start_ns"], BASE + 5)
        self.assertEqual(info["base_ns"], BASE)
        self.assertEqual(info["schema_version"], "1")

    def test_a_gpu_table_in_time_order_per_stream_claims_it_and_one_out_of_order_does_not(self):
        def claim(kernels):
            out = os.path.join(self.root, f"w{len(os.listdir(self.root))}")
            write_window({"columns": {"kernel": kernels}}, CPU, out)
            return pq.read_metadata(os.path.join(out, "kernel.parquet")).metadata.get(b"tracesql.row_order")

        def on_device_0(**columns):
            n = len(columns["start_ns"])
            return kernel(n, **{"device_id": np.zeros(n, np.int64), "context_id": np.ones(n, np.int64), **columns})

        ordered = b"device_id,context_id,stream_id;start_ns,end_ns"
        # streams 7 and 3 interleave, each in (start, end) order
        interleaved = on_device_0(stream_id=i64(7, 3, 7, 3), start_ns=i64(10, 1, 20, 2), end_ns=i64(15, 5, 30, 9))
        self.assertEqual(claim(interleaved), ordered)
        # stream 3 goes back in time (2 after 5): the file claims nothing
        back = on_device_0(stream_id=i64(3, 7, 3), start_ns=i64(5, 1, 2), end_ns=i64(6, 2, 4))
        self.assertIsNone(claim(back))
        # a tie on start with an earlier end is out of order too
        tie = on_device_0(stream_id=i64(3, 3), start_ns=i64(5, 5), end_ns=i64(9, 7))
        self.assertIsNone(claim(tie))
        # the same stream id on two devices: two streams
        devices = on_device_0(device_id=i64(0, 1), stream_id=i64(3, 3), start_ns=i64(5, 1), end_ns=i64(6, 2))
        self.assertEqual(claim(devices), ordered)

    def test_a_cpu_trace_dict_is_gzipped_json_and_lists_work_as_columns(self):
        cols = {k: list(v) for k, v in runtime().items()}
        write_window({"columns": {"cuda_runtime": cols}}, CPU, self.out)
        with gzip.open(os.path.join(self.out, "cpu_trace.json.gz")) as f:
            self.assertEqual(json.load(f), CPU)
        t = pq.read_table(os.path.join(self.out, "cuda_runtime.parquet"))
        self.assertEqual(t.column("cbid").to_pylist(), [211, 311])
        self.assertEqual(str(t.schema.field("cbid").type), "int64")
        with self.assertRaises(ValueError) as cm:
            write_window({"columns": {}}, {"events": []}, os.path.join(self.root, "w2"))
        self.assertIn("traceEvents", str(cm.exception))
        self.assertFalse(os.path.exists(os.path.join(self.root, "w2")))


if __name__ == "__main__":
    unittest.main()
