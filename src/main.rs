//! The `tracesql` binary: parse the command line, call the library, map errors to exit codes
//! (0 ok or closed pipe, 1 usage or input error, 2 internal error).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
