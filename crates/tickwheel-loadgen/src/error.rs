//! The errors `main` turns into a message and an exit code.

use std::fmt;
use std::path::PathBuf;

/// Everything that stops a run early. Each variant maps to one exit code.
#[derive(Debug)]
pub(crate) enum Error {
    /// A flag value that cannot describe a run (exit 2). Fix the flag the message names.
    Input(String),
    /// A file or directory that could not be read or written (exit 2).
    Io {
        /// What was being done, e.g. "writing".
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A timer broke its contract during the run (exit 1): the reports were still written.
    Contract(String),
}

impl Error {
    /// The process exit code: 1 for a broken contract, 2 for bad input or I/O.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::Contract(_) => 1,
            Error::Input(_) | Error::Io { .. } => 2,
        }
    }

    /// An I/O error on `path`.
    pub(crate) fn io(
        doing: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            doing,
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(message) => f.write_str(message),
            Error::Io {
                doing,
                path,
                source,
            } => write!(f, "{doing} {}: {source}", path.display()),
            Error::Contract(message) => write!(f, "timer contract broken: {message}"),
        }
    }
}

impl std::error::Error for Error {}
