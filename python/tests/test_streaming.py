"""to_batches() streams: a result several times larger than the memory it may use goes
through with only the batch in hand resident; to_arrow() shares buffers, not copies them."""

import subprocess
import sys
import textwrap

# 40 M rows of two int64 columns: 640 MB of Arrow data if collected.
ROWS = 40_000_000
BUDGET_MB = 200

CHILD = textwrap.dedent(
    """
    import resource, sys
    import tracesql
    session = tracesql.open(sys.argv[1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    result = session.sql("select value, value * 2 as twice from generate_series(1, {rows}) as t(value)")
    rows = total = 0
    for batch in result.to_batches():
        rows += batch.num_rows
        total += batch.column(1)[batch.num_rows - 1].as_py()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(rows, peak - before)
    """
)


def test_a_result_larger_than_the_budget_streams_through(window):
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(rows=ROWS), str(window)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    rows, grown_mb = map(int, done.stdout.split())
    assert rows == ROWS
    assert grown_mb < BUDGET_MB, f"peak RSS grew {grown_mb} MB streaming {ROWS * 16 >> 20} MB"


COLLECT = textwrap.dedent(
    """
    import resource, sys
    import tracesql
    session = tracesql.open(sys.argv[1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    table = session.sql("select value from generate_series(1, {rows}) as t(value)").to_arrow()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(table.num_rows, table.nbytes >> 20, peak - before)
    """
)


def test_to_arrow_hands_over_the_buffers_without_a_copy(window):
    rows = 4_000_000
    done = subprocess.run(
        [sys.executable, "-c", COLLECT.format(rows=rows), str(window)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    n, arrow_mb, grown_mb = map(int, done.stdout.split())
    assert n == rows
    # A copy would hold the result twice at the hand-off.
    assert grown_mb < 1.5 * arrow_mb + 20, f"peak grew {grown_mb} MB for {arrow_mb} MB of Arrow data"
