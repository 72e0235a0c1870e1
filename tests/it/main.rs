//! Integration tests, one binary (see style.md): a module per concern.

mod archive;
mod catalog;
mod cli;
mod schema_errors;
mod support;
mod views;
