//! Waiting on the engine from Python. The engine runs on one tokio runtime for the process;
//! a caller waits with the GIL released (other Python threads go on) and every 50 ms takes it
//! back for a moment to let Python run its signal handlers: Ctrl-C raises KeyboardInterrupt
//! there, the wait ends with it, and dropping the query's future stops its operators.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use pyo3::prelude::*;

/// How often a wait looks for Ctrl-C: well inside the second a user waits for.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("tracesql")
            .build()
            .expect("the tokio runtime starts")
    })
}

/// Run `work` to its end, or until Ctrl-C (then the KeyboardInterrupt, `work` dropped).
pub fn wait<F>(py: Python<'_>, work: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    py.detach(|| runtime().block_on(until_interrupted(work)))
}

async fn until_interrupted<F: Future>(work: F) -> PyResult<F::Output> {
    let mut work = std::pin::pin!(work);
    let mut tick = tokio::time::interval(SIGNAL_CHECK);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return Ok(out),
            _ = tick.tick() => Python::attach(|py| py.check_signals())?,
        }
    }
}

/// A query's stream as an Arrow reader for a consumer on any thread (pyarrow, polars,
/// DuckDB pulling from `__arrow_c_stream__`). Ctrl-C ends the stream with an error, and the
/// interrupt is raised again so Python still sees its KeyboardInterrupt.
pub struct StreamReader {
    stream: SendableRecordBatchStream,
}

impl StreamReader {
    pub fn new(stream: SendableRecordBatchStream) -> Self {
        StreamReader { stream }
    }
}

impl Iterator for StreamReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = &mut self.stream;
        let next = Python::attach(|py| wait(py, stream.next()));
        match next {
            Ok(next) => next.map(|batch| batch.map_err(|e| ArrowError::ExternalError(Box::new(e)))),
            Err(interrupt) => {
                // SAFETY: the interpreter is running (this thread just held the GIL); the
                // call only sets the flag a signal would.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
                Some(Err(ArrowError::ExternalError(Box::new(interrupt))))
            }
        }
    }
}

impl RecordBatchReader for StreamReader {
    fn schema(&self) -> SchemaRef {
        self.stream.schema()
    }
}
