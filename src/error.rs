//! Errors of the library: one enum, each variant a one-line message a user can act on.

use std::path::PathBuf;

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between a window on disk and an answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: missing required column `{column}` (expected {expected})", file.display())]
    MissingColumn {
        file: PathBuf,
        column: String,
        expected: String,
    },

    #[error("{}: column `{column}` has type {found}, expected {expected}", file.display())]
    ColumnType {
        file: PathBuf,
        column: String,
        expected: String,
        found: String,
    },

    #[error("{}: not a readable Parquet file ({reason})", file.display())]
    CorruptParquet { file: PathBuf, reason: String },

    #[error("{}: {reason}", file.display())]
    BadCpuTrace { file: PathBuf, reason: String },

    #[error("{}: not a window or archive (no .parquet files and no window_id=N folders)", dir.display())]
    NotAWindow { dir: PathBuf },

    #[error("{}: merged trace did not contain any duration events (the window and its CPU trace have no X events)", dir.display())]
    EmptyWindow { dir: PathBuf },

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A write a sink made to an output it cannot name; [`Error::at_output`] names it.
    #[error("cannot write the output: {0}")]
    Write(#[source] std::io::Error),

    #[error("{}: {reason}", file.display())]
    BadReport { file: PathBuf, reason: String },

    #[error("{}: missing table `{table}` (not an Nsight Systems export of a CUDA trace?)", file.display())]
    MissingReportTable { file: PathBuf, table: String },

    #[error("{}: table `{table}` lacks required column `{column}`", file.display())]
    MissingReportColumn {
        file: PathBuf,
        table: String,
        column: String,
    },

    #[error("{0}")]
    Sql(String),

    #[error("{0}")]
    Usage(String),

    #[error("internal: {0}")]
    Internal(String),

    /// A statement stopped by Ctrl-C in the shell.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// An I/O error that names the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// This error with an unnamed output write ([`Error::Write`]) naming `path`.
    pub fn at_output(self, path: &std::path::Path) -> Self {
        match self {
            Error::Write(source) => Error::io(path, source),
            other => other,
        }
    }

    /// A Parquet writer's error writing `path` (None: an output the caller names later): an
    /// I/O failure such as a full disk is the file's, anything else is a bug.
    pub fn parquet_write(e: parquet::errors::ParquetError, path: Option<&std::path::Path>) -> Self {
        let io = match e {
            parquet::errors::ParquetError::External(inner) => {
                match inner.downcast::<std::io::Error>() {
                    Ok(io) => *io,
                    Err(other) => return Error::Internal(other.to_string()),
                }
            }
            other => return Error::Internal(other.to_string()),
        };
        match path {
            Some(path) => Error::io(path, io),
            None => Error::Write(io),
        }
    }

    /// True for errors caused by the input or the command line (exit 1), false for bugs (exit 2).
    pub fn is_user_error(&self) -> bool {
        !matches!(self, Error::Internal(_))
    }
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        // DataFusion errors can span lines (plans, contexts); users get one line.
        let text = e.strip_backtrace();
        Error::Sql(text.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

impl From<datafusion::arrow::error::ArrowError> for Error {
    fn from(e: datafusion::arrow::error::ArrowError) -> Self {
        // Arrow's CSV and JSON writers report a failed write (a full disk) this way.
        if let datafusion::arrow::error::ArrowError::IoError(_, io) = e {
            return Error::Write(io);
        }
        Error::Sql(
            e.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}
