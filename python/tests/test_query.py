"""Queries from Python: the same rows as DuckDB over the same Parquet files, and results
handed to pyarrow, polars, pandas and DuckDB through the Arrow PyCapsule interface."""

from html import escape as html_escape

import duckdb
import pyarrow as pa
import pytest

import tracesql

from query_suite import QUERIES, TABLES


def duckdb_rows(window, sql):
    con = duckdb.connect()
    for table in TABLES:
        con.sql(f"create view {table} as select * from read_parquet('{window / (table + '.parquet')}')")
    return con.sql(sql).fetchall()


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_query_suite_gives_duckdbs_rows(window, name):
    ours = tracesql.open(window).sql(QUERIES[name]).to_arrow()
    rows = [tuple(row.values()) for row in ours.to_pylist()]
    theirs = duckdb_rows(window, QUERIES[name])
    assert len(rows) > 0
    assert rows == theirs


def test_tables_and_schemas_are_the_clis(window):
    session = tracesql.open(window)
    tables = session.tables()
    for name in ("kernel", "cuda_runtime", "gpu_memcpy", "launch", "cpu_launch", "cpu_event"):
        assert name in tables
    schema = session.schema("kernel")
    assert schema.field("start_ns").type == pa.int64()
    assert not any(name.startswith("_") for name in tables)
    assert schema.field("name").type in (pa.string(), pa.large_string(), pa.string_view())


def test_an_archive_has_its_partition_columns(archive):
    session = tracesql.open(archive)
    rows = session.sql("select host, count(*) as n from kernel group by host order by host").to_pylist()
    assert [r["host"] for r in rows] == ["a", "b"]
    assert all(r["n"] > 0 for r in rows)


def test_a_script_runs_its_statements_in_order(window):
    session = tracesql.open(window)
    result = session.sql("create view long as select * from kernel where end_ns - start_ns > 5000; select count(*) as n from long")
    expected = duckdb_rows(window, "select count(*) from kernel where end_ns - start_ns > 5000")
    assert result.to_pylist() == [{"n": expected[0][0]}]


def test_pyarrow_polars_and_duckdb_read_the_result_stream(window):
    import polars

    session = tracesql.open(window)
    result = session.sql(QUERIES["top_kernels"])
    expected = result.to_arrow()
    assert pa.table(result).equals(expected)
    assert polars.from_arrow(result).to_arrow().to_pylist() == expected.to_pylist()
    via_duckdb = duckdb.sql("select * from result").fetchall()
    assert via_duckdb == [tuple(r.values()) for r in expected.to_pylist()]
    assert pa.RecordBatchReader.from_stream(result).read_all().equals(expected)


def test_the_result_schema_is_known_before_it_runs(window):
    result = tracesql.open(window).sql("select name, end_ns - start_ns as ns from kernel")
    assert result.schema.names == ["name", "ns"]
    assert result.schema.field("ns").type == pa.int64()


def test_batches_stream_and_add_up_to_the_table(window):
    result = tracesql.open(window).sql("select * from kernel")
    batches = list(result.to_batches())
    assert len(batches) >= 1
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert pa.Table.from_batches(batches).equals(result.to_arrow())


def test_to_pylist_and_repr_html(window):
    result = tracesql.open(window).sql("select name, count(*) as n from kernel group by name order by n desc, name")
    rows = result.to_pylist()
    html = result._repr_html_()
    assert html.startswith("<table") and "<th>name</th>" in html
    assert f"<td>{html_escape(rows[0]['name'])}</td>" in html
    assert ("&hellip;" in html) == (len(rows) > 20)


def test_collect_and_show_as_datafusion_python_has_them(window, capsys):
    result = tracesql.open(window).sql("select name from kernel order by start_ns, name")
    batches = result.collect()
    assert pa.Table.from_batches(batches).equals(result.to_arrow())
    result.show(3)
    shown = capsys.readouterr().out
    assert result.to_pylist()[0]["name"][:20] in shown
