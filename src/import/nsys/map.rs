//! Stage `map`: the views of sql/import/nsys/ run once per report (every process together),
//! their rows cut per process as they stream. In: a context from `register`. Out: first the
//! report's processes and CPU-side rows ([`side`]), then each mapping's rows written straight
//! into its window tables, one writer per (process, table) ([`stream`]).
//!
//! A window table's rows are ordered by time within the process. nsys writes its tables in
//! that order (the rowids of the real CloverLeaf report are in `start, end, correlationId`
//! order in every activity table), and the plans keep their table's row order, so the rows
//! are checked as they pass and written unsorted; a mapping whose rows are out of order is
//! written again, from a sorted plan that holds its rows (the report is read once more).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, Int64Array};
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{concat_batches, filter_record_batch, SortOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::physical_plan::{execute_stream, ExecutionPlan, SendableRecordBatchStream};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::feed;
use super::register::Registered;
use super::window::TableSink;
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

/// What the report holds besides its mapped tables, every process together.
pub struct Side {
    /// `nsys_process`: the processes that get a window.
    pub processes: RecordBatch,
    pub nvtx: RecordBatch,
    pub threads: RecordBatch,
    pub devices: RecordBatch,
}

/// Plan `sql`, read what it streams (its own round of readers), collect its rows.
async fn collect_streamed(reg: &Registered, sql: &str) -> Result<RecordBatch> {
    let frame = reg.ctx.sql(sql).await?;
    let schema: SchemaRef = frame.schema().inner().clone();
    let plan = frame.create_physical_plan().await?;
    let pump = feed::pump(&reg.feeds);
    let batches = datafusion::physical_plan::collect(plan, reg.ctx.task_ctx()).await;
    pump.finish()?;
    Ok(concat_batches(&schema, &batches?)?)
}

/// The processes (a first pass over the process column of the GPU-op tables) and the
/// CPU-side rows.
pub async fn side(reg: &Registered) -> Result<Side> {
    let ctx = &reg.ctx;
    Ok(Side {
        processes: collect_streamed(reg, "SELECT * FROM nsys_process ORDER BY pid, global_pid")
            .await?,
        nvtx: collect(
            ctx,
            "SELECT * FROM nsys_nvtx ORDER BY _global_pid, tid, ts_ns, dur_ns DESC, name",
        )
        .await?,
        threads: collect(ctx, "SELECT * FROM nsys_thread ORDER BY _global_pid, tid").await?,
        devices: collect(ctx, "SELECT * FROM nsys_device ORDER BY id").await?,
    })
}

/// One window being written: its process and folder.
#[derive(Clone, Debug)]
pub struct Target {
    pub global_pid: i64,
    pub dir: PathBuf,
    pub window_id: i64,
}

/// One window table as written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Written {
    pub rows: u64,
    /// The earliest start (None for cuda_event and for no rows).
    pub first_start: Option<i64>,
}

/// What [`stream`] wrote.
pub struct Streamed {
    /// Per entry of [`MAPPINGS`], per target.
    pub tables: Vec<Vec<Written>>,
    /// API calls whose name the cbid table lacks (NULL cbid), all processes.
    pub unknown_api_names: u64,
    /// Processes with CUDA API calls but no GPU work (they get no window).
    pub skipped_processes: u64,
}

/// Run every mapping, all at once (one task each; a streamed table's reader feeds all of its
/// mappings), writing each target's rows into its window tables.
pub async fn stream(reg: &Registered, targets: Vec<Target>) -> Result<Streamed> {
    let targets: Arc<[Target]> = targets.into();
    let processes: Arc<BTreeSet<i64>> = Arc::new(targets.iter().map(|t| t.global_pid).collect());
    let mut outcomes: Vec<Option<MappingOut>> = MAPPINGS.iter().map(|_| None).collect();
    // round one: as the report comes; round two: the mappings found out of order, sorted
    for sorted in [false, true] {
        let todo: Vec<usize> = (0..MAPPINGS.len())
            .filter(|i| outcomes[*i].is_none())
            .collect();
        if todo.is_empty() {
            break;
        }
        let mut plans = Vec::new();
        for &i in &todo {
            let m = &MAPPINGS[i];
            let sql = if sorted {
                format!(
                    "SELECT * FROM {} ORDER BY {PROCESS_KEY}, {}",
                    m.view, m.order
                )
            } else {
                format!("SELECT * FROM {}", m.view)
            };
            let plan: Arc<dyn ExecutionPlan> =
                reg.ctx.sql(&sql).await?.create_physical_plan().await?;
            plans.push(plan);
        }
        let pump = feed::pump(&reg.feeds);
        let mut tasks = Vec::new();
        for (&i, plan) in todo.iter().zip(plans) {
            let stream = execute_stream(plan, reg.ctx.task_ctx());
            let (targets, processes) = (targets.clone(), processes.clone());
            tasks.push(tokio::spawn(async move {
                write_mapping(&MAPPINGS[i], stream?, &targets, &processes, !sorted).await
            }));
        }
        let mut results = Vec::new();
        for task in tasks {
            results.push(
                task.await
                    .map_err(|e| Error::Internal(format!("an nsys mapping task failed: {e}")))?,
            );
        }
        pump.finish()?;
        for (&i, result) in todo.iter().zip(results) {
            outcomes[i] = result?;
        }
    }
    let mut skipped = BTreeSet::new();
    let mut unknown_api_names = 0;
    let mut tables = Vec::new();
    for out in outcomes {
        let out = out.ok_or_else(|| Error::Internal("a sorted mapping is out of order".into()))?;
        unknown_api_names += out.unknown_api_names;
        skipped.extend(out.skipped);
        tables.push(out.written);
    }
    Ok(Streamed {
        tables,
        unknown_api_names,
        skipped_processes: skipped.len() as u64,
    })
}

/// One mapping's rows, written.
struct MappingOut {
    written: Vec<Written>,
    unknown_api_names: u64,
    skipped: BTreeSet<i64>,
}

/// Write the rows of `stream` (mapping `m`) into each target's window table. With
/// `check_order`, None as soon as a target's rows are out of time order (what was written of
/// the mapping is removed).
async fn write_mapping(
    m: &'static Mapping,
    mut stream: SendableRecordBatchStream,
    targets: &[Target],
    processes: &BTreeSet<i64>,
    check_order: bool,
) -> Result<Option<MappingOut>> {
    let api = m.table == "cuda_runtime" || m.table == "cuda_driver";
    let mut out = MappingOut {
        written: vec![Written::default(); targets.len()],
        unknown_api_names: 0,
        skipped: BTreeSet::new(),
    };
    let mut sinks: Vec<Option<TableSink>> = targets.iter().map(|_| None).collect();
    let mut orders: Vec<Order> = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if api {
            let cbid = batch
                .column_by_name("cbid")
                .ok_or_else(|| Error::Internal(format!("{}: no cbid column", m.view)))?;
            out.unknown_api_names += cbid.null_count() as u64;
            let key = ints(&batch, PROCESS_KEY)?;
            let mut last = None;
            for pid in key.iter().flatten() {
                // a batch is mostly one process's: look each run up once
                if last != Some(pid) && !processes.contains(&pid) {
                    out.skipped.insert(pid);
                }
                last = Some(pid);
            }
        }
        for (i, t) in targets.iter().enumerate() {
            let rows = of_process(&batch, t.global_pid)?;
            if rows.num_rows() == 0 {
                continue;
            }
            if check_order {
                if orders.is_empty() {
                    for _ in targets {
                        orders.push(Order::new(m, &rows)?);
                    }
                }
                if !orders[i].extends(&rows)? {
                    for (sink, t) in sinks.into_iter().zip(targets) {
                        if let Some(sink) = sink {
                            sink.abandon(&t.dir)?;
                        }
                    }
                    return Ok(None);
                }
            }
            let sink = match &mut sinks[i] {
                Some(sink) => sink,
                None => sinks[i].insert(TableSink::try_new(
                    &t.dir,
                    m.table,
                    t.window_id,
                    &rows.schema(),
                )?),
            };
            sink.write(&rows)?;
        }
    }
    for (i, sink) in sinks.into_iter().enumerate() {
        if let Some(sink) = sink {
            let first_start = sink.first_start;
            out.written[i] = Written {
                rows: sink.finish()?,
                first_start,
            };
        }
    }
    Ok(Some(out))
}

/// Whether a process's rows of one mapping keep coming in its order (`Mapping::order`,
/// ascending, NULLs last, as `ORDER BY` puts them).
struct Order {
    columns: Vec<String>,
    converter: RowConverter,
    last: Option<OwnedRow>,
}

impl Order {
    fn new(m: &Mapping, rows: &RecordBatch) -> Result<Order> {
        let columns: Vec<String> = m.order.split(',').map(|c| c.trim().to_string()).collect();
        let mut fields = Vec::new();
        for c in &columns {
            let field = rows
                .schema()
                .field_with_name(c)
                .map_err(|_| Error::Internal(format!("{}: no column {c}", m.view)))?
                .clone();
            fields.push(SortField::new_with_options(
                field.data_type().clone(),
                SortOptions {
                    descending: false,
                    nulls_first: false,
                },
            ));
        }
        Ok(Order {
            columns,
            converter: RowConverter::new(fields)?,
            last: None,
        })
    }

    /// Whether `rows` are in order and follow the rows seen before.
    fn extends(&mut self, rows: &RecordBatch) -> Result<bool> {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|c| {
                rows.column_by_name(c)
                    .cloned()
                    .ok_or_else(|| Error::Internal(format!("no column {c}")))
            })
            .collect::<Result<_>>()?;
        let keys = self.converter.convert_columns(&arrays)?;
        let n = keys.num_rows();
        if n == 0 {
            return Ok(true);
        }
        if self.last.as_ref().is_some_and(|l| l.row() > keys.row(0)) {
            return Ok(false);
        }
        if (1..n).any(|i| keys.row(i - 1) > keys.row(i)) {
            return Ok(false);
        }
        self.last = Some(keys.row(n - 1).owned());
        Ok(true)
    }
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

/// The Int64 column `name` of `batch`.
pub fn ints<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a Int64Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .ok_or_else(|| Error::Internal(format!("no Int64 column {name}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    /// start (None: NULL), end, correlation id
    type Times = (Option<i64>, i64, i64);

    fn times(rows: &[Times]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("start_ns", DataType::Int64, true),
            Field::new("end_ns", DataType::Int64, true),
            Field::new("correlation_id", DataType::Int64, true),
        ]));
        let col = |f: &dyn Fn(&Times) -> Option<i64>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<Int64Array>())
        };
        RecordBatch::try_new(
            schema,
            vec![col(&|r| r.0), col(&|r| Some(r.1)), col(&|r| Some(r.2))],
        )
        .unwrap()
    }

    #[test]
    fn rows_in_time_order_pass_across_batches_and_one_out_of_order_is_caught() {
        let kernel = &MAPPINGS[0];
        let first = times(&[(Some(1), 5, 1), (Some(1), 5, 1), (Some(1), 6, 0)]);
        let mut order = Order::new(kernel, &first).unwrap();
        assert!(
            order.extends(&first).unwrap(),
            "ties and later ends are in order"
        );
        // NULL starts sort last, as ORDER BY puts them
        assert!(order
            .extends(&times(&[(Some(2), 0, 0), (None, 0, 0)]))
            .unwrap());
        assert!(!order.extends(&times(&[(Some(3), 0, 0)])).unwrap());

        let mut order = Order::new(kernel, &first).unwrap();
        assert!(order.extends(&times(&[(Some(5), 0, 9)])).unwrap());
        // a batch that starts before the last one ended
        assert!(!order.extends(&times(&[(Some(4), 9, 9)])).unwrap());
        let mut order = Order::new(kernel, &first).unwrap();
        // within a batch: same start and end, smaller correlation id after a larger one
        assert!(!order
            .extends(&times(&[(Some(5), 7, 2), (Some(5), 7, 1)]))
            .unwrap());
    }
}
