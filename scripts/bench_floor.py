"""The least time any exporter of a window can take on this machine, in three parts that
every export does and that cost the same whoever does them: decompressing the CPU trace,
decoding every column of the window's Parquet tables, and writing the output's bytes.
The joins and the formatting come on top, so a real export is slower than the sum.

    bench_floor.py --window DIR --bytes N --dir OUT_DIR

prints "CPU_TRACE_S PARQUET_S WRITE_S" (each the best of three runs).
"""

import argparse
import os
import pathlib
import tempfile
import time

import pyarrow.parquet as pq
from isal import igzip  # ISA-L: the fastest gunzip we know of


def best_of(runs, work):
    """The shortest of `runs` timings of `work()`, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def read_cpu_trace(window):
    igzip.decompress((window / "cpu_trace.json.gz").read_bytes())


def decode_parquet(window):
    # Every column of every table, decoded with pyarrow's threads (one per core).
    for path in sorted(window.glob("*.parquet")):
        pq.read_table(path, use_threads=True)


def write_bytes(size, directory):
    # A new file, as an export writes one: page-cache bandwidth, the file's pages freed
    # outside the timing.
    chunk = b"x" * (8 << 20)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        path = os.path.join(scratch, "out")
        start = time.perf_counter()
        with open(path, "wb") as f:
            left = size
            while left > 0:
                f.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
        elapsed = time.perf_counter() - start
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=pathlib.Path, required=True)
    parser.add_argument("--bytes", type=int, required=True, help="output size to write")
    parser.add_argument("--dir", type=pathlib.Path, required=True, help="where to write it")
    args = parser.parse_args()
    cpu = best_of(3, lambda: read_cpu_trace(args.window))
    parquet = best_of(3, lambda: decode_parquet(args.window))
    write = min(write_bytes(args.bytes, args.dir) for _ in range(3))
    print(f"{cpu:.3f} {parquet:.3f} {write:.3f}")


if __name__ == "__main__":
    main()
