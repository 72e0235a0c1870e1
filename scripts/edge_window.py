#!/usr/bin/env python3
"""Write tests/fixtures/edge_window: the seed's tiny example window with the inputs the
reference exporter treats specially, for the `edge` golden case (scripts/regen-golden.sh):
a list annotation with a float and non-ASCII text, a JSON-text annotation ("5"), an object
annotation on an event-record node, an unknown copy kind and memory kind, a negative host-fn
address, an unknown runtime cbid, an unknown sync type, a sync on a context without GPU
work, a correlation id repeated in external_correlation, and a user annotation without a
name.

    python3 scripts/edge_window.py [SEED_DIR]      (SEED_DIR default: ../shared/seed)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
seed = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "..", "shared", "seed")
out = os.path.join(root, "tests", "fixtures", "edge_window")

with open(os.path.join(seed, "examples", "tiny_window.json")) as f:
    d = json.load(f)
c = d["columns"]
c["gpu_memset"]["annotation"][0] = [{"a": 1.50, "b": "é"}]
c["gpu_memcpy"]["copy_kind"][0] = 99
c["gpu_memcpy"]["src_kind"][0] = 42
c["gpu_memcpy"]["annotation"][0] = "5"
c["graph_event_node"]["annotation"][0] = {"note": "x", "n": [1, 2]}
c["graph_host_node"]["host_fn_addr"][0] = -255
c["cuda_runtime"]["cbid"][1] = 99999
c["cuda_sync"]["sync_type"][0] = 7
c["cuda_sync"]["context_id"][1] = 55
ext = c["external_correlation"]
ext["correlation_id"].append(101)
ext["external_id"].append(3)
ext["user_external_id"].append(4)
d["user_annotations"]["3"] = None

with tempfile.TemporaryDirectory() as tmp:
    window_json = os.path.join(tmp, "edge_window.json")
    with open(window_json, "w") as f:
        json.dump(d, f)
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(
        [sys.executable, os.path.join(seed, "window_parquet.py"), "from-json", window_json,
         os.path.join(seed, "examples", "tiny_cpu_trace.json"), out],
        check=True,
    )
