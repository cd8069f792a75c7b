//! `alloclab`, the driver: parses the command line, runs one command, and maps the lab's
//! error type to an exit status (0 ok, 1 a run failed, 2 bad input, 130 interrupted).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = alloclab::cli::Cli::parse();
    alloclab::analysis::stats::set_level(cli.confidence);
    match alloclab::commands::dispatch(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.message());
            ExitCode::from(e.exit_code())
        }
    }
}
