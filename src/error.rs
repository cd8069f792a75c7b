//! The lab's one error type and the exit codes it maps to: 2 for bad input and for what
//! this platform or machine cannot do, 1 for a run that failed, 130 after Ctrl-C.

use crate::counters::{CounterMode, Unavailable};
use std::fmt::Display;

/// Why a command did not finish with success.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What the user gave cannot work; nothing was run.
    #[error("{0}")]
    BadInput(String),
    /// This platform or machine cannot do what was asked (no perf, not x86_64, …).
    #[error("{0}")]
    Unsupported(String),
    /// Runs were attempted and some failed, or results could not be written.
    #[error("{0}")]
    RunFailed(String),
    /// Ctrl-C or SIGTERM: the finished results are kept.
    #[error("{0}")]
    Interrupted(String),
}

/// Exit status for a failed run.
pub const EXIT_RUN_FAILED: u8 = 1;
/// Exit status for bad input (clap uses the same for its usage errors).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit status after Ctrl-C, as shells report it.
pub const EXIT_INTERRUPTED: u8 = 130;

impl Error {
    pub fn bad(e: impl Display) -> Self {
        Error::BadInput(e.to_string())
    }

    pub fn failed(e: impl Display) -> Self {
        Error::RunFailed(e.to_string())
    }

    /// A `--counters` method that cannot work on this machine.
    pub fn counters(mode: CounterMode, why: Unavailable) -> Self {
        Error::Unsupported(format!("--counters {}: {why}", mode.name()))
    }

    /// The process exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::BadInput(_) | Error::Unsupported(_) => EXIT_BAD_INPUT,
            Error::RunFailed(_) => EXIT_RUN_FAILED,
            Error::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }

    /// The line printed on stderr: "error: …", or "interrupted: …".
    pub fn message(&self) -> String {
        match self {
            Error::Interrupted(why) => match crate::ui::interrupt::signal_name() {
                Some(sig) => format!("interrupted by {sig}: {why}"),
                None => format!("interrupted: {why}"),
            },
            other => format!("error: {other}"),
        }
    }
}

impl From<crate::analysis::cliff::CliffError> for Error {
    fn from(e: crate::analysis::cliff::CliffError) -> Self {
        use crate::analysis::cliff::CliffError;
        match e {
            CliffError::Interrupted(_) => Error::Interrupted(e.to_string()),
            CliffError::Unavailable(..) => Error::Unsupported(e.to_string()),
            CliffError::NoChange { .. }
            | CliffError::NotAStep { .. }
            | CliffError::Run(_)
            | CliffError::OutOfTime(_)
            | CliffError::CutShort { .. } => Error::RunFailed(e.to_string()),
        }
    }
}

impl From<crate::engine::command::SessionError> for Error {
    fn from(e: crate::engine::command::SessionError) -> Self {
        use crate::engine::command::SessionError;
        match e {
            SessionError::Counters { mode, why } => Error::counters(mode, why),
            SessionError::Save(_) => Error::RunFailed(e.to_string()),
        }
    }
}

impl From<crate::model::knobs::KnobError> for Error {
    fn from(e: crate::model::knobs::KnobError) -> Self {
        Error::BadInput(e.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
