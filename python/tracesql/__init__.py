"""tracesql: SQL over CUPTI GPU trace windows, from Python.

The engine is the one the `tracesql` command runs (Apache DataFusion over the window's
Parquet tables, with the views of the CLI); results reach pyarrow, pandas, polars and DuckDB
through the Arrow PyCapsule interface, without a copy.

Example::

    import tracesql

    session = tracesql.open("runs/")      # a window folder, or an archive of window_id=N folders
    result = session.sql(
        "select name, count(*) as launches, sum(end_ns - start_ns) as ns "
        "from kernel group by name order by ns desc limit 10"
    )
    result.to_polars()                    # or .to_pandas(), .to_arrow(), polars.from_arrow(result)

Errors are `tracesql.Error`: `InputError` for a file or folder that is not what the call
expects, `UsageError` for the call itself (bad SQL, an unknown table). Ctrl-C stops a
running query with KeyboardInterrupt.
"""

from __future__ import annotations

import html as _html
import os as _os
import warnings as _warnings
from typing import TYPE_CHECKING, Any, Iterator, Union

import pyarrow as _pa

from tracesql_window import ACTIVITY_KINDS, SCHEMA_VERSION, SIDE_TABLES, write_window

from . import _internal
from ._internal import Error, InputError, UsageError

if TYPE_CHECKING:
    import pandas
    import polars

__all__ = [
    "ACTIVITY_KINDS",
    "SCHEMA_VERSION",
    "SIDE_TABLES",
    "Error",
    "InputError",
    "Report",
    "Result",
    "Session",
    "UsageError",
    "import_kineto",
    "import_nsys",
    "open",
    "reports",
    "write_window",
]

PathLike = Union[str, "_os.PathLike[str]"]

# Rows a notebook shows of a result (the rest is counted, not fetched).
_PREVIEW_ROWS = 20


def open(path: PathLike) -> Session:
    """Open the window folder or archive at `path` for queries.

    An archive (a folder of `window_id=N` folders, maybe under `key=value` partitions) is
    one set of tables with its partition columns, as in the CLI. Warnings about the files
    (an unreadable CPU trace, say) are Python warnings.

    Example::

        session = tracesql.open("runs/window_id=000001")
        session.tables()[:3]        # ['annotation', 'api_call', ...]
    """
    inner, warnings = _internal.open(_os.fspath(path))
    for warning in warnings:
        _warnings.warn(warning, stacklevel=2)
    return Session(inner)


class Session:
    """A window or archive opened for queries (see `tracesql.open`)."""

    def __init__(self, inner: _internal.Session) -> None:
        self._inner = inner

    @property
    def path(self) -> str:
        """The folder this session opened."""
        return _os.fspath(self._inner.path)

    def sql(self, query: str) -> Result:
        """Plan `query` (DataFusion SQL over the window's tables and views).

        A script of several statements runs all but the last now (`create view ...;
        select ...`); the last one runs each time its result is consumed.

        Example::

            top = session.sql("select name, count(*) n from kernel group by name order by n desc")
            top.to_pandas().head()
        """
        return Result(self._inner.sql(query))

    def tables(self) -> list[str]:
        """The names of the tables and views, sorted.

        Example::

            "kernel" in session.tables()        # True
        """
        return self._inner.tables()

    def schema(self, name: str) -> _pa.Schema:
        """The Arrow schema of table or view `name`.

        Example::

            session.schema("kernel").field("start_ns").type     # int64
        """
        return _pa.schema(self._inner.schema(name))

    def report(self, name: str, **params: float) -> Report:
        """Report `name` (see `tracesql.reports()`), its parameters overriding the defaults.

        The same analysis as `tracesql report NAME`: HTA's and Nsight Systems' definitions,
        grouped by the archive's partition columns. In a notebook it shows as the HTML page of
        `tracesql report --format html`, plots included. The intermediate tables several
        reports read are computed by the first report that needs them and kept while the
        session lives, so a second report is quicker than the first.

        Example::

            session.report("temporal_breakdown").to_pandas()
            session.report("gpu_gaps", min_gap_ns=50_000)
        """
        values = [(key, str(value)) for key, value in params.items()]
        return Report(self._inner.report(name, values), self._inner, name, values)

    def doctor(self) -> Result:
        """The data-quality checks of `tracesql doctor`: one row per check, with its severity,
        the rows that broke it and the first of them.

        Example::

            findings = session.doctor().to_pandas()
            findings[findings["rows"] > 0]
        """
        return Result(self._inner.doctor())

    def export(
        self,
        out: PathLike,
        where: str | None = None,
        max_size: str | int | None = None,
        format: str | None = None,
    ) -> None:
        """Export the window (or every window of the archive, on one timeline) as a trace
        Perfetto UI opens: Chrome JSON (`.json`, gzipped for `.json.gz`) or Perfetto protobuf
        (`.pftrace`), as `tracesql export` writes it. The file appears complete or not at all.

        `where` keeps the GPU ops and API calls a SQL predicate selects (with what they need);
        `max_size` ("500MB" or bytes) splits the trace into parts a browser can hold.

        Example::

            session.export("trace.pftrace")
            session.export("nccl.json.gz", where="name like '%nccl%'")
        """
        argv = ["export", "--window", self.path, "--output", _os.fspath(out)]
        if where is not None:
            argv += ["--where", where]
        if max_size is not None:
            argv += ["--max-size", str(max_size)]
        if format is not None:
            argv += ["--format", format]
        _internal.run_command(argv)

    def __repr__(self) -> str:
        return f"tracesql.Session({self.path!r})"


def import_kineto(paths: PathLike | list[PathLike], out: PathLike) -> Session:
    """Import PyTorch profiler (Kineto) traces as windows in the new folder `out` (several
    traces: an archive, one `rank=R` window each), as `tracesql import kineto`; returns the
    session of `out`.

    Example::

        session = tracesql.import_kineto(["rank0.json.gz", "rank1.json.gz"], "runs/step12")
        session.report("temporal_breakdown").to_pandas()
    """
    return _import("kineto", paths, out)


def import_nsys(paths: PathLike | list[PathLike], out: PathLike) -> Session:
    """Import Nsight Systems reports (SQLite exports, or parquetdir folders) as windows in the
    new folder `out`, one per process that did GPU work, as `tracesql import nsys`; returns
    the session of `out`.

    Example::

        session = tracesql.import_nsys("run.sqlite", "runs/run")
    """
    return _import("nsys", paths, out)


def _import(source: str, paths: PathLike | list[PathLike], out: PathLike) -> Session:
    if isinstance(paths, (str, _os.PathLike)):
        paths = [paths]
    _internal.run_command(["import", source, *map(_os.fspath, paths), "--output", _os.fspath(out)])
    return open(out)


def reports() -> list[dict[str, Any]]:
    """The documented analyses `Session.report` runs: name, title and parameters.

    Example::

        [r["name"] for r in tracesql.reports()]    # ['api_summary', 'gpu_gaps', ...]
    """
    return [
        {
            "name": name,
            "title": title,
            "params": [{"name": p, "default": d, "doc": doc} for p, d, doc in params],
        }
        for name, title, params in _internal.reports()
    ]


class Result:
    """The result of a query. Every consumer runs the query anew.

    It is an Arrow stream (`__arrow_c_stream__`): `pyarrow.table(result)`,
    `polars.from_arrow(result)` and `duckdb.sql("select * from result")` read it without a
    copy. In a notebook it shows as a table of its first rows.
    """

    def __init__(self, query: _internal.Query | _internal.Batches) -> None:
        self._query = query

    @property
    def schema(self) -> _pa.Schema:
        """The Arrow schema of the result (known without running the query)."""
        return _pa.schema(self._query.schema())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream: runs the query as the consumer pulls batches."""
        return self._query.__arrow_c_stream__(requested_schema)

    def to_arrow(self) -> _pa.Table:
        """Run the query; the whole result as a `pyarrow.Table` (buffers shared, not copied).

        Example::

            table = session.sql("select * from kernel").to_arrow()
        """
        return _pa.table(self._query.collect())

    def to_batches(self) -> Iterator[_pa.RecordBatch]:
        """Run the query; its `pyarrow.RecordBatch`es one at a time, as they are computed.

        Only the batch in hand is in memory: for results larger than memory.

        Example::

            for batch in session.sql("select * from api_call").to_batches():
                writer.write_batch(batch)
        """
        for batch in self._query.batches():
            yield _pa.record_batch(batch)

    def collect(self) -> list[_pa.RecordBatch]:
        """Run the query; its batches, as datafusion-python's `collect()` gives them.

        Example::

            batches = session.sql("select * from kernel").collect()
        """
        return self.to_arrow().to_batches()

    def show(self, rows: int = _PREVIEW_ROWS) -> None:
        """Print the first `rows` rows (runs the query only as far as it needs).

        Example::

            session.sql("select * from launch").show(5)
        """
        table = _pa.table(self._query.head(rows))
        print(table.to_pandas() if _has_pandas() else table)

    def to_pandas(self) -> pandas.DataFrame:
        """Run the query; the result as a pandas DataFrame (needs pandas).

        Example::

            df = session.sql("select name, end_ns - start_ns as ns from kernel").to_pandas()
        """
        _require("pandas")
        return self.to_arrow().to_pandas()

    def to_polars(self) -> polars.DataFrame:
        """Run the query; the result as a polars DataFrame (needs polars; no copy).

        Example::

            df = session.sql("select * from kernel").to_polars()
        """
        polars = _require("polars")
        return polars.from_arrow(self.to_arrow(), rechunk=False)

    def to_pylist(self) -> list[dict[str, Any]]:
        """Run the query; the rows as a list of dicts.

        Example::

            session.sql("select count(*) as n from kernel").to_pylist()    # [{'n': 6510}]
        """
        return self.to_arrow().to_pylist()

    def _preview(self) -> tuple[_pa.Table, bool]:
        head = _pa.table(self._query.head(_PREVIEW_ROWS + 1))
        return head.slice(0, _PREVIEW_ROWS), head.num_rows > _PREVIEW_ROWS

    def _repr_html_(self) -> str:
        table, more = self._preview()
        return _html_table(table, more)

    def __repr__(self) -> str:
        table, more = self._preview()
        text = str(table.to_pandas()) if _has_pandas() else str(table)
        return text + ("\n... (more rows)" if more else "")


class Report(Result):
    """A report's result (see `Session.report`); in a notebook, its HTML page with plots."""

    def __init__(self, query: _internal.Query, session: _internal.Session, name: str, values: list) -> None:
        super().__init__(query)
        self._session = session
        self._values = values
        self.name = name

    def _repr_html_(self) -> str:
        return self._session.report_html(self.name, self._values)


def _require(module: str) -> Any:
    """`module`, or an ImportError that says how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(f"this needs {module}: pip install {module}") from e


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _html_table(table: _pa.Table, more: bool) -> str:
    """`table` as an HTML table for a notebook; `more` adds a row that says rows follow."""
    head = "".join(f"<th>{_html.escape(name)}</th>" for name in table.column_names)
    rows = []
    for row in table.to_pylist():
        cells = "".join(
            f"<td>{'' if v is None else _html.escape(str(v))}</td>" for v in row.values()
        )
        rows.append(f"<tr>{cells}</tr>")
    if more:
        rows.append(f'<tr><td colspan="{max(table.num_columns, 1)}">&hellip;</td></tr>')
    return (
        '<table class="tracesql"><thead><tr>'
        + head
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
