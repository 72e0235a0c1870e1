//! Stage `report`: what one canned report (`sql/reports/NAME.sql`) produced, as the runner
//! hands it to a renderer.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

/// One report's result.
pub struct ReportOutput {
    /// The report's name, its file's stem (e.g. "kernel_summary").
    pub name: String,
    /// The report's one-line description.
    pub title: String,
    /// Archive partition columns, first in the schema (e.g. ["rank"]); empty for one window.
    pub partition_keys: Vec<String>,
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl ReportOutput {
    /// Rows over all batches.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}
