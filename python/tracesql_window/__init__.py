"""Write a CUPTI trace window as a tracesql window folder (docs/window-format.md).

    from tracesql_window import write_window
    write_window(trace_window, cpu_trace, "runs/window_id=000001")

`trace_window` is the dict the reference exporter (`merge_trace_window_into_chrome_trace`)
takes: per-kind column arrays under "columns" plus the side tables; `cpu_trace` is the Kineto
CPU trace as a dict or a path. Needs pyarrow only, not the tracesql binary.
"""

from .schema import ACTIVITY_KINDS, SCHEMA_VERSION, SIDE_TABLES
from .writer import write_window

__all__ = ["ACTIVITY_KINDS", "SCHEMA_VERSION", "SIDE_TABLES", "write_window"]
