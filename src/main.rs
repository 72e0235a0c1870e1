//! The `tracesql` binary: the command line of [`tracesql::cli`] (exit codes: 0 ok or closed
//! pipe, 1 usage or input error, 2 internal error, 130 Ctrl-C).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(tracesql::cli::run(std::env::args_os()))
}
