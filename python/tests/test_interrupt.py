"""Ctrl-C during a long query raises KeyboardInterrupt within a second, and the session
answers the next query. The query is a triple join that would run for minutes."""

import faulthandler
import os
import signal
import threading
import time

import pytest

import tracesql

LONG = (
    "select count(*) from kernel a, kernel b, kernel c "
    "where a.start_ns + b.start_ns > c.end_ns"
)


@pytest.fixture(autouse=True)
def watchdog():
    """A test here that hangs (a Ctrl-C that did not stop the work) ends the run within a
    minute, with every thread's stack on stderr, instead of holding CI until its limit."""
    faulthandler.dump_traceback_later(60, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def interrupt_after(seconds):
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.parametrize("consume", ["to_arrow", "to_batches", "to_pylist"])
def test_ctrl_c_stops_a_long_join(window, consume):
    session = tracesql.open(window)
    result = session.sql(LONG)
    interrupt_after(1.0)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        value = getattr(result, consume)()
        if consume == "to_batches":
            list(value)
    waited = time.monotonic() - started
    # The join runs for minutes: ending near the signal's time means Ctrl-C ended it.
    assert waited < 10, f"KeyboardInterrupt came {waited:.1f} s after the query began"
    assert session.sql("select count(*) as n from kernel").to_pylist()[0]["n"] > 0


def test_other_threads_run_while_a_query_waits(window):
    """The GIL is released while the engine works: a Python thread makes progress."""
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    ticker = threading.Thread(target=count)
    ticker.start()
    try:
        before = len(ticks)
        tracesql.open(window).sql(
            "select count(*) from kernel a, kernel b where a.start_ns < b.start_ns"
        ).to_arrow()
        during = len(ticks) - before
    finally:
        stop.set()
        ticker.join()
    assert during > 10
