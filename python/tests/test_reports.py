"""Reports and the doctor from Python: the CLI's answers, as results; in a notebook a report
is the CLI's HTML page."""

import json

import pytest

import tracesql
from conftest import cli


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a == b or (a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b)))
    return a == b


def cli_rows(*args):
    done = cli(*args, "--format", "ndjson")
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if line]


def test_every_report_gives_the_clis_rows(window):
    session = tracesql.open(window)
    names = [r["name"] for r in tracesql.reports()]
    assert len(names) >= 5
    for name in names:
        ours = session.report(name).to_pylist()
        theirs = cli_rows("report", name, "--window", window)
        assert len(ours) == len(theirs), name
        for mine, cli_row in zip(ours, theirs):
            assert mine.keys() == cli_row.keys(), name
            for key in mine:
                assert close(mine[key], cli_row[key]), f"{name}.{key}: {mine[key]!r} != {cli_row[key]!r}"


def test_a_parameter_changes_the_answer(window):
    session = tracesql.open(window)
    every = session.report("gpu_gaps", min_gap_ns=0).to_pylist()
    theirs = cli_rows("report", "gpu_gaps", "--window", window, "--param", "min_gap_ns=0")
    assert len(every) == len(theirs)
    assert session.report("gpu_gaps", min_gap_ns=10**15).to_pylist() == []


@pytest.mark.parametrize(
    "name, params, words",
    [
        ("no_such_report", {}, "no_such_report"),
        ("gpu_gaps", {"nope": 1}, "no parameter"),
        ("gpu_gaps", {"min_gap_ns": "many"}, "must be a number"),
    ],
)
def test_a_bad_report_call_is_a_usage_error(window, name, params, words):
    with pytest.raises(tracesql.UsageError, match=words):
        tracesql.open(window).report(name, **params)


def test_a_report_in_a_notebook_is_the_html_page_with_its_plots(window):
    page = tracesql.open(window).report("temporal_breakdown")._repr_html_()
    assert "temporal_breakdown" in page
    assert "<svg" in page


def test_the_doctor_gives_the_clis_findings(window):
    findings = tracesql.open(window).doctor().to_pylist()
    done = cli("doctor", "--window", window, "--format", "json")
    theirs = json.loads(done.stdout)
    assert len(findings) > 0
    assert len(findings) == len(theirs if isinstance(theirs, list) else theirs["findings"])
