"""Exports and imports from Python are the CLI's: the same bytes, the same windows, and the
same one-line errors."""

import gzip
from pathlib import Path

import pytest

import tracesql
from conftest import cli

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
DLRM = sorted((FIXTURES / "kineto").glob("param_dlrm_worker*.json.gz"))
NSYS = FIXTURES / "nsys" / "hpcgroup_pipit__perlmutter-cloverleaf-cuda.sqlite"


def unzipped(path):
    data = Path(path).read_bytes()
    data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    # the trace is named after its output path (traceName)
    return data.replace(str(path).encode(), b"OUTPUT")


@pytest.mark.parametrize("name", ["trace.json.gz", "trace.pftrace"])
def test_export_writes_what_the_cli_writes(window, tmp_path, name):
    ours, theirs = tmp_path / ("ours-" + name), tmp_path / ("cli-" + name)
    tracesql.open(window).export(ours)
    done = cli("export", "--window", window, "--output", theirs)
    assert done.returncode == 0, done.stderr
    assert unzipped(ours) == unzipped(theirs)
    assert len(unzipped(ours)) > 10_000


def test_export_where_keeps_what_the_cli_keeps(window, tmp_path):
    where = "name like '%gemm%'"
    ours, theirs = tmp_path / "ours.json", tmp_path / "cli.json"
    tracesql.open(window).export(ours, where=where)
    done = cli("export", "--window", window, "--output", theirs, "--where", where)
    assert done.returncode == 0, done.stderr
    assert unzipped(ours) == unzipped(theirs)
    everything = tmp_path / "all.json"
    tracesql.open(window).export(everything)
    assert 0 < len(unzipped(ours)) < len(unzipped(everything))


def test_export_errors_are_exceptions_and_leave_no_file(window, tmp_path):
    session = tracesql.open(window)
    with pytest.raises(tracesql.UsageError):
        session.export(tmp_path / "bad.json", where="no_such_column > 1")
    with pytest.raises(tracesql.UsageError, match="max"):
        session.export(tmp_path / "bad2.json", max_size="lots")
    with pytest.raises(tracesql.Error):
        session.export(Path(window) / "inside.json")
    assert list(tmp_path.iterdir()) == []
    assert not (Path(window) / "inside.json").exists()


def tables_of(session):
    return {
        name: session.sql(f"select count(*) as n from {name}").to_pylist()[0]["n"]
        for name in session.tables()
    }


def test_import_kineto_gives_the_clis_archive(tmp_path):
    ours = tracesql.import_kineto(DLRM, tmp_path / "ours")
    done = cli("import", "kineto", *DLRM, "--output", tmp_path / "cli")
    assert done.returncode == 0, done.stderr
    counts = tables_of(ours)
    assert counts == tables_of(tracesql.open(tmp_path / "cli"))
    assert counts["kernel"] > 0
    ranks = ours.sql("select distinct rank from kernel order by rank").to_pylist()
    assert len(ranks) == len(DLRM)


def test_import_nsys_gives_the_clis_window(tmp_path):
    ours = tracesql.import_nsys(NSYS, tmp_path / "ours")
    done = cli("import", "nsys", NSYS, "--output", tmp_path / "cli")
    assert done.returncode == 0, done.stderr
    counts = tables_of(ours)
    assert counts == tables_of(tracesql.open(tmp_path / "cli"))
    assert counts["kernel"] > 0


def test_an_import_of_a_broken_trace_is_an_input_error(tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [ {"ph": "X", ')
    with pytest.raises(tracesql.InputError, match="broken.json"):
        tracesql.import_kineto(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()
