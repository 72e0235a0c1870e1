"""Fixtures of the package's tests: synthetic windows written by the package's own CLI."""

import subprocess
import sys

import pytest


def cli(*args, **kwargs):
    """Run the installed package's `tracesql` command (in a child: the CLI owns Ctrl-C)."""
    return subprocess.run(
        [sys.executable, "-m", "tracesql._cli", *map(str, args)],
        capture_output=True,
        text=True,
        **kwargs,
    )


def synth(out, events, seed=7):
    done = cli("synth", "--out", out, "--events", events, "--seed", seed)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="session")
def window(tmp_path_factory):
    """A synthetic window of 20,000 events (kernels, API calls, copies, syncs, graphs)."""
    return synth(tmp_path_factory.mktemp("synth") / "window_id=000001", 20_000)


@pytest.fixture(scope="session")
def archive(tmp_path_factory):
    """An archive: two windows under a `host=` partition."""
    root = tmp_path_factory.mktemp("archive")
    synth(root / "host=a" / "window_id=000001", 3_000, seed=1)
    synth(root / "host=b" / "window_id=000002", 3_000, seed=2)
    return root
