"""Every failure is a tracesql.Error whose message is the CLI's one line: InputError for
what is on disk, UsageError for the call."""

import pytest

import tracesql


def test_the_exceptions_form_one_family():
    assert issubclass(tracesql.InputError, tracesql.Error)
    assert issubclass(tracesql.UsageError, tracesql.Error)
    assert issubclass(tracesql.Error, Exception)
    assert tracesql.Error.__module__ == "tracesql"


def test_a_missing_path_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "no-such-window"
    with pytest.raises(tracesql.InputError, match="no-such-window"):
        tracesql.open(missing)


def test_a_folder_without_tables_is_an_input_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a window")
    with pytest.raises(tracesql.InputError, match="not a window or archive"):
        tracesql.open(tmp_path)


def test_a_broken_parquet_file_names_the_file(tmp_path, window):
    broken = tmp_path / "window_id=000001"
    broken.mkdir()
    (broken / "kernel.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(tracesql.InputError, match="kernel.parquet"):
        tracesql.open(broken)


def test_a_wrong_column_type_names_the_file_and_column(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = tmp_path / "window_id=000001"
    bad.mkdir()
    pq.write_table(pa.table({"start_ns": ["a"], "end_ns": [1]}), bad / "kernel.parquet")
    with pytest.raises(tracesql.InputError, match=r"kernel\.parquet.*start_ns"):
        tracesql.open(bad)


@pytest.mark.parametrize(
    "sql, words",
    [
        ("selec * from kernel", "Expected"),
        ("select * from no_such_table", "no_such_table"),
        ("select no_such_column from kernel", "no_such_column"),
        ("", "no SQL statement"),
    ],
)
def test_bad_sql_is_a_usage_error_on_one_line(window, sql, words):
    session = tracesql.open(window)
    with pytest.raises(tracesql.UsageError, match=words) as raised:
        session.sql(sql)
    assert "\n" not in str(raised.value)


def test_an_unknown_table_schema_is_a_usage_error(window):
    with pytest.raises(tracesql.UsageError, match="nope"):
        tracesql.open(window).schema("nope")


def test_an_error_while_running_is_raised_by_the_consumer(window):
    result = tracesql.open(window).sql("select cast(name as bigint) from kernel")
    with pytest.raises(tracesql.UsageError, match="(?i)cast"):
        result.to_arrow()
    with pytest.raises(tracesql.UsageError, match="(?i)cast"):
        list(result.to_batches())
