//! The exceptions of the package: `tracesql.Error`, and its `InputError` (a file or folder
//! that is not what the command expects) and `UsageError` (the call itself: bad SQL, an
//! unknown name or parameter). The message is the CLI's one line.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;

create_exception!(
    tracesql,
    Error,
    PyException,
    "Everything tracesql raises; the message is the CLI's one line."
);
create_exception!(
    tracesql,
    InputError,
    Error,
    "A file or folder that is not what the call expects (names the file and column)."
);
create_exception!(
    tracesql,
    UsageError,
    Error,
    "A call that cannot be run as asked: bad SQL, an unknown table, report or parameter."
);

/// The Python exception for a library error.
pub fn to_py(e: impl Into<tracesql::Error>) -> PyErr {
    let e: tracesql::Error = e.into();
    raise(Some(&e), &e.to_string())
}

/// The Python exception for a command's error: the CLI's line (its outermost context), the
/// class of the library error beneath (a bad argument has none: a usage error).
pub fn anyhow_to_py(e: anyhow::Error) -> PyErr {
    raise(e.downcast_ref::<tracesql::Error>(), &e.to_string())
}

fn raise(cause: Option<&tracesql::Error>, message: &str) -> PyErr {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    match cause {
        Some(tracesql::Error::Internal(_)) => Error::new_err(line),
        Some(tracesql::Error::Cancelled) => PyKeyboardInterrupt::new_err(line),
        Some(tracesql::Error::Usage(_) | tracesql::Error::Sql(_)) | None => {
            UsageError::new_err(line)
        }
        Some(_) => InputError::new_err(line),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    Ok(())
}
