"""The package's `tracesql` command is the Rust CLI: same commands, output and exit codes."""

import os
import shutil
import subprocess
import sys

from conftest import cli


def test_the_console_script_is_installed():
    script = shutil.which("tracesql", path=os.path.dirname(sys.executable))
    assert script is not None, "pip did not install the tracesql command beside python"
    done = subprocess.run([script, "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.startswith("tracesql ")


def test_query_prints_the_answer(window):
    done = cli("query", "--window", window, "--format", "csv", "select count(*) as n from kernel")
    assert done.returncode == 0, done.stderr
    header, value = done.stdout.split()
    assert header == "n" and int(value) > 0


def test_bad_sql_exits_1_with_one_line(window):
    done = cli("query", "--window", window, "select * from nope")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "nope" in lines[0]


def test_a_malformed_command_line_says_how_to_use_it():
    done = cli("query", "--no-such-flag")
    assert done.returncode == 2
    assert "--no-such-flag" in done.stderr


def test_help_has_an_example():
    done = cli("query", "--help")
    assert done.returncode == 0
    assert "tracesql query" in done.stdout
