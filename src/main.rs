//! `alloclab`, the driver: parses the command line, runs one command, and maps the lab's
//! error type to an exit status (0 ok, 1 a run failed, 2 bad input, 130 interrupted).

use std::process::ExitCode;

/// A line on stderr that a closed stderr does not turn into a panic (as the library's
/// `fmt::say!`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    // --help and --version print through the same checked write as every result: a
    // page that could not be written is an error (exit 1), not a silent success.
    let cli = match alloclab::cli::Cli::try_parse_in_width() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => e.exit(),
        // A help or version page with nowhere to go is refused like any output.
        Err(_) if alloclab::commands::stdout_is_open().is_err() => {
            if let Err(err) = alloclab::commands::stdout_is_open() {
                say!("{}", err.message());
                return ExitCode::from(err.exit_code());
            }
            return ExitCode::from(2);
        }
        Err(e) if std::io::IsTerminal::is_terminal(&std::io::stdout()) => {
            // In colour, as clap prints it.
            return match e.print() {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    say!("error: writing the help failed: {err}");
                    ExitCode::from(1)
                }
            };
        }
        Err(e) => {
            let page = e.render().to_string();
            return match alloclab::commands::print_out(&page) {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    say!("{}", err.message());
                    ExitCode::from(err.exit_code())
                }
            };
        }
    };
    // A mistyped option would otherwise be taken for the command to run.
    if let Some(why) = cli.command.mistyped_option() {
        say!("error: {why}");
        return ExitCode::from(2);
    }
    for warning in cli.command.options_after_command() {
        say!("{warning}");
    }
    match alloclab::commands::dispatch(cli.command, cli.confidence) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say!("{}", e.message());
            ExitCode::from(e.exit_code())
        }
    }
}
