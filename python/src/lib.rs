//! `tracesql._internal`: the engine behind the `tracesql` Python package (python/tracesql/).
//!
//! ```text
//! open(path) -> Session (a window or archive registered in DataFusion, as the CLI does)
//!   .sql(text) -> Query (planned, not run; every consumer runs it anew)
//!       .__arrow_c_stream__()  the Arrow PyCapsule stream: pyarrow, polars, DuckDB pull batches
//!       .collect()             every batch, waited for here (Ctrl-C cancels) -> Batches
//!       .batches()             one batch per next(), for results larger than memory
//!   .report(name, params) -> Query; .report_html(...) the page of `report --format html`
//!   .doctor() -> Batches (the findings table of `tracesql doctor`)
//! reports()                    the reports, their titles and parameters
//! run_command(argv)            one CLI command as a library call (export, import)
//! run_cli(argv)                the `tracesql` command, the same as the Rust binary
//! ```
//!
//! Results cross to Python without a copy: the Arrow C data interface hands over the
//! buffers. Every wait on the engine releases the GIL and checks for Ctrl-C every 50 ms;
//! KeyboardInterrupt drops the query, which stops its operators (the engine's yield points).

mod arrow_capsule;
mod errors;
mod wait;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::dataframe::DataFrame;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::arrow_capsule::{array_capsules, schema_capsule, stream_capsule};
use crate::errors::to_py;
use crate::wait::wait;

/// A window or archive opened for queries.
#[pyclass(frozen, module = "tracesql._internal")]
struct Session {
    ctx: SessionContext,
    path: PathBuf,
    /// The archive's partition columns (`host`, `window_id`), which reports group by.
    partitions: Vec<String>,
}

/// Open the window or archive at `path`: its tables and views registered, warnings about
/// its files returned beside the session (the CLI prints them on stderr).
#[pyfunction]
fn open(py: Python<'_>, path: PathBuf) -> PyResult<(Session, Vec<String>)> {
    let window = tracesql::window::Window::open(&path).map_err(to_py)?;
    let partitions = window.partition_keys.clone();
    let ctx = wait(py, async {
        let ctx = tracesql::catalog::open(&window).await?;
        // The helpers several reports read are held: computed on their first read, kept for
        // the session (as `tracesql report all` does for its run).
        let reports = tracesql::report::reports();
        tracesql::report::register_helpers_for(&ctx, &partitions, &reports, true).await?;
        Ok::<_, tracesql::Error>(ctx)
    })?
    .map_err(to_py)?;
    let session = Session {
        ctx,
        path,
        partitions,
    };
    Ok((session, window.warnings))
}

#[pymethods]
impl Session {
    /// Plan `text` (statements before the last one run now: they may create what it uses).
    fn sql(&self, py: Python<'_>, text: &str) -> PyResult<Query> {
        let df = wait(py, tracesql::query::plan_script(&self.ctx, text))?.map_err(to_py)?;
        Ok(Query { df })
    }

    /// The names of the tables and views, sorted (not the reports' `_` helpers).
    fn tables(&self) -> Vec<String> {
        let mut names = Vec::new();
        for catalog in self.ctx.catalog_names() {
            let Some(catalog) = self.ctx.catalog(&catalog) else {
                continue;
            };
            for schema in catalog.schema_names() {
                if schema == "information_schema" {
                    continue;
                }
                if let Some(schema) = catalog.schema(&schema) {
                    names.extend(
                        schema
                            .table_names()
                            .into_iter()
                            .filter(|n| !n.starts_with('_')),
                    );
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// The Arrow schema of table or view `name`, as an object with `__arrow_c_schema__`.
    fn schema(&self, py: Python<'_>, name: &str) -> PyResult<Schema> {
        let df = wait(py, self.ctx.table(name))?.map_err(to_py)?;
        Ok(Schema {
            schema: Arc::new(df.schema().as_arrow().clone()),
        })
    }

    /// Report `name` (sql/reports/) with `params` overriding its defaults, planned.
    fn report(&self, py: Python<'_>, name: &str, params: Vec<(String, String)>) -> PyResult<Query> {
        let report = tracesql::report::find(name).map_err(to_py)?;
        let sql = report.sql(&self.partitions, &params).map_err(to_py)?;
        let df = wait(py, tracesql::query::plan_script(&self.ctx, &sql))?.map_err(to_py)?;
        Ok(Query { df })
    }

    /// Report `name` as the HTML page of `tracesql report --format html` (tables, plots).
    fn report_html(
        &self,
        py: Python<'_>,
        name: &str,
        params: Vec<(String, String)>,
    ) -> PyResult<String> {
        let report = tracesql::report::find(name).map_err(to_py)?;
        let output =
            wait(py, report.collect(&self.ctx, &self.partitions, &params))?.map_err(to_py)?;
        Ok(tracesql::report::html::render(
            &[output],
            &self.path.display().to_string(),
        ))
    }

    /// The findings of the data-quality checks (sql/doctor/), as `tracesql doctor` prints them.
    fn doctor(&self, py: Python<'_>) -> PyResult<Batches> {
        let findings =
            wait(py, tracesql::doctor::run(&self.ctx, &self.partitions))?.map_err(to_py)?;
        let batch = tracesql::doctor::report::table(&findings).map_err(to_py)?;
        Ok(Batches {
            schema: batch.schema(),
            batches: vec![batch],
        })
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }
}

/// A report as Python lists it: (name, title, [(parameter, default, doc)]).
type ReportInfo = (String, String, Vec<(String, String, String)>);

/// Every report.
#[pyfunction]
fn reports() -> Vec<ReportInfo> {
    tracesql::report::reports()
        .into_iter()
        .map(|r| {
            let params = r
                .params
                .iter()
                .map(|p| (p.name.clone(), p.default.clone(), p.doc.clone()));
            (r.name.to_string(), r.title.clone(), params.collect())
        })
        .collect()
}

/// An Arrow schema, handed over by the PyCapsule interface.
#[pyclass(frozen, module = "tracesql._internal")]
struct Schema {
    schema: SchemaRef,
}

#[pymethods]
impl Schema {
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }
}

/// A planned query: each consumer runs it anew, as a DataFusion DataFrame does.
#[pyclass(frozen, module = "tracesql._internal")]
struct Query {
    df: DataFrame,
}

impl Query {
    fn arrow_schema(&self) -> SchemaRef {
        Arc::new(self.df.schema().as_arrow().clone())
    }

    fn execute(&self, py: Python<'_>) -> PyResult<SendableRecordBatchStream> {
        wait(py, self.df.clone().execute_stream())?.map_err(to_py)
    }

    /// Every batch of `df` (this query, or a part of it), in memory.
    fn collect_of(&self, py: Python<'_>, df: DataFrame) -> PyResult<Batches> {
        let batches = wait(py, df.collect())?.map_err(to_py)?;
        Ok(Batches {
            schema: self.arrow_schema(),
            batches,
        })
    }
}

#[pymethods]
impl Query {
    /// The result's schema, as an object with `__arrow_c_schema__`.
    fn schema(&self) -> Schema {
        Schema {
            schema: self.arrow_schema(),
        }
    }

    /// Run the query and stream its batches to the consumer as it pulls them.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the producer may keep its own schema (the protocol allows it)
        let stream = self.execute(py)?;
        stream_capsule(py, wait::StreamReader::new(stream))
    }

    /// Run the query to the end: every batch, in memory.
    fn collect(&self, py: Python<'_>) -> PyResult<Batches> {
        self.collect_of(py, self.df.clone())
    }

    /// At most `rows` rows of the result (for a preview).
    fn head(&self, py: Python<'_>, rows: usize) -> PyResult<Batches> {
        let df = self.df.clone().limit(0, Some(rows)).map_err(to_py)?;
        self.collect_of(py, df)
    }

    /// Run the query; each `next()` waits for one batch.
    fn batches(&self, py: Python<'_>) -> PyResult<BatchIter> {
        let stream = self.execute(py)?;
        Ok(BatchIter {
            stream: std::sync::Mutex::new(Some(stream)),
        })
    }
}

/// Batches in memory, handed over without a copy (an Arrow stream of Arc'd buffers).
#[pyclass(frozen, module = "tracesql._internal")]
struct Batches {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

#[pymethods]
impl Batches {
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = datafusion::arrow::record_batch::RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        stream_capsule(py, reader)
    }

    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    fn schema(&self) -> Schema {
        Schema {
            schema: self.schema.clone(),
        }
    }

    fn collect(&self) -> Batches {
        Batches {
            schema: self.schema.clone(),
            batches: self.batches.clone(),
        }
    }

    fn head(&self, rows: usize) -> Batches {
        let mut left = rows;
        let mut batches = Vec::new();
        for batch in &self.batches {
            if left == 0 {
                break;
            }
            let take = left.min(batch.num_rows());
            batches.push(batch.slice(0, take));
            left -= take;
        }
        Batches {
            schema: self.schema.clone(),
            batches,
        }
    }

    fn batches(&self) -> BatchIter {
        let stream = datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(self.batches.clone().into_iter().map(Ok)),
        );
        BatchIter {
            stream: std::sync::Mutex::new(Some(Box::pin(stream))),
        }
    }
}

/// One batch, handed over by `__arrow_c_array__` (pyarrow.record_batch takes it).
#[pyclass(frozen, module = "tracesql._internal")]
struct Batch {
    batch: RecordBatch,
}

#[pymethods]
impl Batch {
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        array_capsules(py, &self.batch)
    }
}

/// The batches of a running query, one per `next()`.
#[pyclass(module = "tracesql._internal")]
struct BatchIter {
    // None once the stream ended or failed: the iterator stays exhausted.
    stream: std::sync::Mutex<Option<SendableRecordBatchStream>>,
}

#[pymethods]
impl BatchIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        let mut guard = self
            .stream
            .lock()
            .expect("a batch iterator used by one thread");
        let Some(stream) = guard.as_mut() else {
            return Ok(None);
        };
        let next = match wait(py, stream.next()) {
            Ok(next) => next,
            Err(interrupted) => {
                *guard = None;
                return Err(interrupted);
            }
        };
        match next {
            Some(Ok(batch)) => Ok(Some(Batch { batch })),
            Some(Err(e)) => {
                *guard = None;
                Err(to_py(e))
            }
            None => {
                *guard = None;
                Ok(None)
            }
        }
    }
}

/// Run the `tracesql` command line `argv` (program name first); returns its exit status.
/// The console script's: it owns the process (Ctrl-C exits it, clap may exit it).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| tracesql::cli::run(argv))
}

/// Run one `tracesql` command (`argv` after the program name) as a library call: its errors
/// raised as exceptions, Ctrl-C a KeyboardInterrupt (exports and imports from Python).
#[pyfunction]
fn run_command(py: Python<'_>, argv: Vec<OsString>) -> PyResult<()> {
    let argv = std::iter::once(OsString::from("tracesql")).chain(argv);
    wait(py, tracesql::cli::run_in_process(argv))?.map_err(errors::anyhow_to_py)
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(run_command, m)?)?;
    m.add_function(wrap_pyfunction!(reports, m)?)?;
    m.add_class::<Session>()?;
    m.add_class::<Query>()?;
    m.add_class::<Schema>()?;
    m.add_class::<Batches>()?;
    m.add_class::<Batch>()?;
    m.add_class::<BatchIter>()?;
    errors::register(m)?;
    Ok(())
}
