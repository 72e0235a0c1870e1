"""The `tracesql` command of the Python package: the Rust CLI, served by the compiled module."""

import sys

from . import _internal


def main() -> None:
    """Run `tracesql` with this process's arguments and exit with its status."""
    sys.stdout.flush()
    sys.exit(_internal.run_cli(["tracesql", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
