//! Integration tests, one binary (see style.md): a module per concern.

mod archive;
mod catalog;
mod cli;
#[cfg(feature = "cluster")]
mod cluster;
mod convert;
mod critical_path;
mod diff;
mod diff_timeline;
mod doctor;
mod export;
mod filter;
mod import;
mod import_fuzz;
mod import_nsys;
mod import_nsys_backtrace;
mod import_nsys_faults;
mod interrupt;
mod interval_join;
mod merge;
mod merge_pftrace;
mod nsys_reports;
mod oracle_diff;
mod outputs;
mod perfetto;
mod python_writer;
mod report_html;
mod reports;
mod running_window;
mod schema_errors;
mod shell;
mod split;
mod stream_order;
mod support;
mod venv;
mod views;
