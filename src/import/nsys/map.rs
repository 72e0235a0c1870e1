//! Stage `map`: the views of sql/import/nsys/ run once per report (every process together),
//! then cut per process. In: a context from `register`. Out: per window table, the rows of one
//! process in the window format's column names, and the CPU-side rows of that process.

use datafusion::arrow::array::{Array, Int64Array};
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::SessionContext;

use crate::error::Error;
use crate::Result;

/// One window table and the view that fills it.
#[derive(Debug)]
pub struct Mapping {
    /// The view under sql/import/nsys/.
    pub view: &'static str,
    /// The window table it becomes.
    pub table: &'static str,
    /// Row order within a process (nsys's tables have none that means anything).
    pub order: &'static str,
}

const BY_TIME: &str = "start_ns, end_ns, correlation_id";

/// The window tables an nsys report fills.
pub static MAPPINGS: &[Mapping] = &[
    Mapping {
        view: "nsys_kernel",
        table: "kernel",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_gpu_memcpy",
        table: "gpu_memcpy",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_gpu_memset",
        table: "gpu_memset",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_cuda_runtime",
        table: "cuda_runtime",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_cuda_driver",
        table: "cuda_driver",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_cuda_sync",
        table: "cuda_sync",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_cuda_event",
        table: "cuda_event",
        order: BY_TIME,
    },
    Mapping {
        view: "nsys_overhead",
        table: "overhead",
        order: "start_ns, end_ns, name",
    },
];

/// The column every per-process view carries and no window table keeps.
pub const PROCESS_KEY: &str = "_global_pid";

/// Every view's rows for the whole report.
pub struct Mapped {
    /// Per entry of [`MAPPINGS`], in that order: the batches as the plan made them (not
    /// concatenated: that copy held every mapped row twice).
    pub tables: Vec<Vec<RecordBatch>>,
    /// `nsys_process`: the processes that get a window.
    pub processes: RecordBatch,
    pub nvtx: RecordBatch,
    pub threads: RecordBatch,
    pub devices: RecordBatch,
    /// API calls whose name the cbid table lacks (NULL cbid), all processes.
    pub unknown_api_names: u64,
    /// Processes with CUDA API calls but no GPU work (they get no window).
    pub skipped_processes: u64,
}

/// Run every view of the report.
pub async fn run(ctx: &SessionContext) -> Result<Mapped> {
    let mut tables = Vec::new();
    let mut unknown_api_names = 0;
    for m in MAPPINGS {
        let sql = format!(
            "SELECT * FROM {} ORDER BY {}, {}",
            m.view, PROCESS_KEY, m.order
        );
        let batches = ctx.sql(&sql).await?.collect().await?;
        if m.table == "cuda_runtime" || m.table == "cuda_driver" {
            for batch in &batches {
                let cbid = batch
                    .column_by_name("cbid")
                    .ok_or_else(|| Error::Internal(format!("{}: no cbid column", m.view)))?;
                unknown_api_names += cbid.null_count() as u64;
            }
        }
        tables.push(batches);
    }
    Ok(Mapped {
        tables,
        processes: collect(ctx, "SELECT * FROM nsys_process ORDER BY pid, global_pid").await?,
        nvtx: collect(
            ctx,
            "SELECT * FROM nsys_nvtx ORDER BY _global_pid, tid, ts_ns, dur_ns DESC, name",
        )
        .await?,
        threads: collect(ctx, "SELECT * FROM nsys_thread ORDER BY _global_pid, tid").await?,
        devices: collect(ctx, "SELECT * FROM nsys_device ORDER BY id").await?,
        unknown_api_names,
        skipped_processes: {
            let b = collect(
                ctx,
                "SELECT count(DISTINCT _global_pid) AS n FROM _nsys_api \
                 WHERE _global_pid NOT IN (SELECT global_pid FROM nsys_process)",
            )
            .await?;
            let n = ints(&b, "n")?;
            if n.is_empty() || n.is_null(0) {
                0
            } else {
                n.value(0) as u64
            }
        },
    })
}

/// One batch holding every row of `sql`.
async fn collect(ctx: &SessionContext, sql: &str) -> Result<RecordBatch> {
    let frame = ctx.sql(sql).await?;
    let schema: SchemaRef = frame.schema().inner().clone();
    let batches = frame.collect().await?;
    Ok(concat_batches(&schema, &batches)?)
}

/// The rows of `batch` whose process key is `global_pid`, without the key column.
pub fn of_process(batch: &RecordBatch, global_pid: i64) -> Result<RecordBatch> {
    let at = batch
        .schema()
        .index_of(PROCESS_KEY)
        .map_err(|_| Error::Internal(format!("a mapped view lacks {PROCESS_KEY}")))?;
    let key = batch.column(at);
    let wanted = Int64Array::new_scalar(global_pid);
    let mask = eq(key, &wanted)?;
    let keep: Vec<usize> = (0..batch.num_columns()).filter(|i| *i != at).collect();
    if mask.true_count() == batch.num_rows() {
        return Ok(batch.project(&keep)?); // every row is the process's: no copy
    }
    let rows = filter_record_batch(batch, &mask)?;
    Ok(rows.project(&keep)?)
}

/// [`of_process`] of every batch, empty results left out.
pub fn of_process_all(batches: &[RecordBatch], global_pid: i64) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::with_capacity(batches.len());
    for batch in batches {
        let rows = of_process(batch, global_pid)?;
        if rows.num_rows() > 0 || out.is_empty() {
            out.push(rows);
        }
    }
    Ok(out)
}

/// The Int64 column `name` of `batch`.
pub fn ints<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a Int64Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .ok_or_else(|| Error::Internal(format!("no Int64 column {name}")))
}
