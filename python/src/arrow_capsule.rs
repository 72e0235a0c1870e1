//! The Arrow PyCapsule interface: schemas, batches and streams handed to pyarrow, polars or
//! DuckDB through the Arrow C data interface, buffers shared, nothing copied. A capsule
//! nobody consumed releases its struct when Python drops it (the FFI structs' Drop).

use arrow::array::{Array, StructArray};
use arrow::datatypes::Schema;
use arrow::ffi::{to_ffi, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::record_batch::{RecordBatch, RecordBatchReader};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::to_py;

/// `__arrow_c_schema__`: the schema as an `arrow_schema` capsule.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema).map_err(to_py)?;
    PyCapsule::new_with_value(py, ffi, c"arrow_schema")
}

/// `__arrow_c_array__`: a batch as a struct array, its schema and array capsules.
pub fn array_capsules<'py>(
    py: Python<'py>,
    batch: &RecordBatch,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let data = StructArray::from(batch.clone()).into_data();
    let (array, schema) = to_ffi(&data).map_err(to_py)?;
    Ok((
        PyCapsule::new_with_value(py, schema, c"arrow_schema")?,
        PyCapsule::new_with_value(py, array, c"arrow_array")?,
    ))
}

/// `__arrow_c_stream__`: `reader` as an `arrow_array_stream` capsule.
pub fn stream_capsule<'py>(
    py: Python<'py>,
    reader: impl RecordBatchReader + Send + 'static,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
}
