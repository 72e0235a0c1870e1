//! tracesql: SQL over CUPTI GPU trace windows.
//!
//! ```text
//! window dir / archive (Parquet per CUPTI kind + side tables + cpu_trace.json.gz)
//!   -> window   : discover files, check schemas, cast to canonical types
//!   -> catalog  : register tables (absent kinds = empty tables) in a DataFusion SessionContext
//!                 made by `engine` (every planner setting, custom operator and lookup, with
//!                 the figure that justifies it); the export's tables also count their
//!                 rows' places in the file (`file_row`)
//!   -> sql      : views (joins), plain .sql files compiled into the binary
//!   -> query    : run SQL, stream RecordBatches
//!   -> report   : the documented analyses of sql/reports/ (HTA's and nsys's definitions)
//!   -> diff     : two runs in one catalog (a `run` column), their steps and GPU work paired
//!                 and the change of step time split by cause (sql/diff/)
//!   -> export   : run the sql/export/ plans of a window (their `-- @export` manifest), stream
//!                 them into the Chrome or the Perfetto sink
//!   -> convert  : export every window of an archive, in parallel, one output per window
//!   -> cluster  : the same catalog and queries on a Ballista scheduler and executors
//!   -> sink     : encode batches (table, CSV, JSON, NDJSON, Parquet; Chrome JSON; Perfetto)
//!   -> file     : atomic write (temp + rename); one-member gzip compressed in parallel
//! ```
//!
//! `shell` is an interactive session over these stages (statements, dot-commands, exports).
//! `doctor` runs the data-quality checks of `sql/doctor/` over a catalog.
//!
//! `synth` writes realistic synthetic windows (tests, benches, the demo window); `import`
//! turns PyTorch profiler (Kineto) traces and Nsight Systems reports into windows; `memory` is
//! the malloc policy of the commands that export; `profile` the diagnostics the CLI switches on;
//! `cli` wires the stages for the command line and holds no logic of its own; the binary and
//! the Python package's `tracesql` command both run it.

pub mod error;
pub mod schema;

pub mod window;

pub mod catalog;
pub mod engine;
pub mod sql;

pub mod diff;
pub mod doctor;
pub mod export;
pub mod query;
pub mod report;

pub mod convert;

#[cfg(feature = "cluster")]
pub mod cluster;

pub mod sink;

pub mod file;

pub mod shell;

pub mod memory;
pub mod profile;
pub mod threads;

pub mod demo;
pub mod import;
pub mod synth;

pub mod cli;

pub use error::{Error, Result};

// `cli` names the library as its users do (`tracesql::window::Window`).
extern crate self as tracesql;
