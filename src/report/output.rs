//! One report's result, as the HTML page and the other sinks take it.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

/// One report's result.
pub struct ReportOutput {
    /// The report's name, e.g. "kernel_summary".
    pub name: String,
    /// The report's one-line description.
    pub title: String,
    /// Archive partition columns, first in the schema (e.g. ["rank"]); empty for one window.
    pub partition_keys: Vec<String>,
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}
