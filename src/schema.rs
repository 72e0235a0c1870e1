//! The canonical schemas of a window: every activity kind and side table, its columns, their
//! Arrow types, and which columns a file must carry. Flows into `window` (checks) and
//! `catalog` (table schemas); the synthetic generator writes files of these schemas.
//!
//! Required columns are the ones the reference exporter indexes unconditionally
//! (spec window-schema.md §2, "R"); optional ones are read when present and null-filled in
//! the table when a file lacks them.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

/// The window format version this build writes and reads.
pub const SCHEMA_VERSION: &str = "1";

/// The Kineto CPU trace file inside a window directory.
pub const CPU_TRACE_FILE: &str = "cpu_trace.json.gz";

/// A column's logical type in the format contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    /// Int64; any integer width or signedness in a file is cast to it.
    I64,
    /// Int32 (graph_deps ordinals); any integer width is cast to it.
    I32,
    /// UInt64 (environment.data, graph_event_record.cuda_event).
    U64,
    /// Float64 (pm_sampling metrics).
    F64,
    /// Text; Utf8, LargeUtf8, Utf8View or dictionary-encoded text in a file.
    Str,
}

impl ColType {
    /// The Arrow type a table exposes for this column. Text is Utf8View, the type
    /// DataFusion's Parquet reader produces, so scans never re-encode strings.
    pub fn table_type(self) -> DataType {
        match self {
            ColType::I64 => DataType::Int64,
            ColType::I32 => DataType::Int32,
            ColType::U64 => DataType::UInt64,
            ColType::F64 => DataType::Float64,
            ColType::Str => DataType::Utf8View,
        }
    }

    /// The Arrow type a writer stores in the Parquet file (the format contract, §7).
    pub fn file_type(self) -> DataType {
        match self {
            ColType::Str => DataType::Utf8,
            other => other.table_type(),
        }
    }

    /// How the type is named in error messages and docs.
    pub fn contract_name(self) -> &'static str {
        match self {
            ColType::I64 => "Int64",
            ColType::I32 => "Int32",
            ColType::U64 => "UInt64",
            ColType::F64 => "Float64",
            ColType::Str => "Utf8",
        }
    }

    /// Whether a file column of type `found` can be read as this type.
    pub fn accepts(self, found: &DataType) -> bool {
        match self {
            ColType::I64 | ColType::I32 | ColType::U64 => found.is_integer(),
            ColType::F64 => found.is_floating() || found.is_integer(),
            ColType::Str => is_text(found),
        }
    }
}

/// Whether a file type holds text.
pub fn is_text(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_text(value),
        _ => false,
    }
}

/// One column of a canonical schema.
#[derive(Clone, Copy, Debug)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub ty: ColType,
    pub required: bool,
}

const fn req(name: &'static str, ty: ColType) -> ColumnSpec {
    ColumnSpec {
        name,
        ty,
        required: true,
    }
}

const fn opt(name: &'static str, ty: ColType) -> ColumnSpec {
    ColumnSpec {
        name,
        ty,
        required: false,
    }
}

use ColType::{Str, I32, I64, U64};

/// Whether a table holds CUPTI activity or is a side table of the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableRole {
    Activity,
    Side,
}

/// A table of the window format: its file stem, role and canonical columns.
#[derive(Debug)]
pub struct TableSpec {
    pub name: &'static str,
    pub role: TableRole,
    pub columns: &'static [ColumnSpec],
    /// Extra columns must be Float64 metrics (pm_sampling's wide form).
    pub extra_are_metrics: bool,
}

impl TableSpec {
    /// The file name of this table inside a window directory.
    pub fn file_name(&self) -> String {
        format!("{}.parquet", self.name)
    }

    /// The canonical column spec of `name`, if the table has one.
    pub fn column(&self, name: &str) -> Option<&ColumnSpec> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The table schema with canonical columns only (as an absent kind exposes it).
    pub fn table_schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.ty.table_type(), true))
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The schema a writer stores (Utf8 text, producer order of the canonical columns).
    pub fn file_schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| Field::new(c.name, c.ty.file_type(), true))
            .collect();
        Arc::new(Schema::new(fields))
    }
}

/// Columns every GPU-op kind shares (spec §2.1-2.5).
macro_rules! gpu_common {
    () => {
        [
            req("start_ns", I64),
            req("end_ns", I64),
            req("device_id", I64),
            req("context_id", I64),
            req("stream_id", I64),
            req("correlation_id", I64),
            req("graph_node_id", I64),
            req("graph_id", I64),
            req("annotation", Str),
        ]
    };
}

const KERNEL: &[ColumnSpec] = &{
    let c = gpu_common!();
    [
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        req("name", Str),
        c[8],
        req("grid_x", I64),
        req("grid_y", I64),
        req("grid_z", I64),
        req("block_x", I64),
        req("block_y", I64),
        req("block_z", I64),
        req("registers_per_thread", I64),
        req("static_shared_memory", I64),
        req("dynamic_shared_memory", I64),
        req("priority", I64),
        req("queued", I64),
        req("channel", I64),
        req("channel_type", I64),
        opt("metadata", Str),
        opt("logical_lane", I64),
        opt("lane_name", Str),
    ]
};

const GPU_MEMCPY: &[ColumnSpec] = &{
    let c = gpu_common!();
    [
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        req("bytes", I64),
        req("copy_kind", I64),
        req("src_kind", I64),
        req("dst_kind", I64),
        req("flags", I64),
        req("channel", I64),
        req("channel_type", I64),
        opt("metadata", Str),
        opt("logical_lane", I64),
        opt("lane_name", Str),
        opt("src_device_id", I64),
        opt("dst_device_id", I64),
    ]
};

const GPU_MEMSET: &[ColumnSpec] = &{
    let c = gpu_common!();
    [
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        req("bytes", I64),
        req("value", I64),
        req("memory_kind", I64),
        req("flags", I64),
        req("channel", I64),
        req("channel_type", I64),
        opt("metadata", Str),
        opt("logical_lane", I64),
        opt("lane_name", Str),
    ]
};

const GRAPH_HOST_NODE: &[ColumnSpec] = &{
    let c = gpu_common!();
    [
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        req("process_id", I64),
        req("thread_id", I64),
        opt("host_fn", Str),
        opt("host_fn_addr", I64),
        opt("logical_lane", I64),
        opt("lane_name", Str),
    ]
};

const GRAPH_EVENT_NODE: &[ColumnSpec] = &{
    let c = gpu_common!();
    [
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        opt("logical_lane", I64),
        opt("lane_name", Str),
    ]
};

const API: &[ColumnSpec] = &[
    req("cbid", I64),
    req("start_ns", I64),
    req("end_ns", I64),
    req("process_id", I64),
    req("thread_id", I64),
    req("correlation_id", I64),
    // the producer's API name; shown where the cbid table lacks the cbid (importers)
    opt("name", Str),
];

const OVERHEAD: &[ColumnSpec] = &[
    req("start_ns", I64),
    req("end_ns", I64),
    opt("correlation_id", I64),
    req("name", Str),
    opt("overhead_kind", I64),
];

const CUDA_SYNC: &[ColumnSpec] = &[
    req("sync_type", I64),
    req("start_ns", I64),
    req("end_ns", I64),
    req("context_id", I64),
    req("stream_id", I64),
    req("correlation_id", I64),
    req("cuda_event_id", I64),
    req("cuda_event_sync_id", I64),
];

// The reference reads only the four required columns. The spec names the CUPTI event id
// `event_id`; the reference's own example window calls it `cuda_event_id` (as cuda_sync
// does), so both are accepted.
const CUDA_EVENT: &[ColumnSpec] = &[
    req("cuda_event_sync_id", I64),
    req("correlation_id", I64),
    req("device_id", I64),
    req("context_id", I64),
    opt("stream_id", I64),
    opt("event_id", I64),
    opt("cuda_event_id", I64),
    opt("start_ns", I64),
    opt("end_ns", I64),
    opt("graph_node_id", I64),
    opt("annotation", Str),
];

const EXTERNAL_CORRELATION: &[ColumnSpec] = &[
    opt("external_kind", I64),
    req("external_id", I64),
    req("correlation_id", I64),
    opt("user_external_id", I64),
];

const ENVIRONMENT: &[ColumnSpec] = &[
    req("start_ns", I64),
    req("device_id", I64),
    req("environment_kind", I64),
    req("data", U64),
];

const PM_SAMPLING: &[ColumnSpec] = &[req("start_ns", I64), req("device_id", I64)];

const USER_ANNOTATION: &[ColumnSpec] = &[req("external_id", I64), req("name", Str)];

const THREAD_RESOURCE: &[ColumnSpec] = &[
    req("process_id", I64),
    req("thread_id", I64),
    req("resource_id", I64),
];

const GRAPH_DEPS: &[ColumnSpec] = &[
    req("node_id", I64),
    req("pred_node_id", I64),
    req("pred_ordinal", I32),
    req("node_ordinal", I32),
];

const GRAPH_EVENT_RECORD: &[ColumnSpec] = &[req("graph_node_id", I64), req("cuda_event", U64)];

const WINDOW_INFO: &[ColumnSpec] = &[
    req("window_id", I64),
    req("start_ns", I64),
    opt("boundary_ns", I64),
    opt("base_ns", I64),
    req("schema_version", Str),
    opt("producer", Str),
    opt("cupti_version", I64),
    opt("cbid_table_version", Str),
];

const fn activity(name: &'static str, columns: &'static [ColumnSpec]) -> TableSpec {
    TableSpec {
        name,
        role: TableRole::Activity,
        columns,
        extra_are_metrics: false,
    }
}

const fn side(name: &'static str, columns: &'static [ColumnSpec]) -> TableSpec {
    TableSpec {
        name,
        role: TableRole::Side,
        columns,
        extra_are_metrics: false,
    }
}

/// Every Parquet table of the window format, activity kinds first in spec §2 order.
pub static TABLES: &[TableSpec] = &[
    activity("kernel", KERNEL),
    activity("gpu_memcpy", GPU_MEMCPY),
    activity("gpu_memset", GPU_MEMSET),
    activity("graph_host_node", GRAPH_HOST_NODE),
    activity("graph_event_node", GRAPH_EVENT_NODE),
    activity("cuda_runtime", API),
    activity("cuda_driver", API),
    activity("overhead", OVERHEAD),
    activity("cuda_sync", CUDA_SYNC),
    activity("cuda_event", CUDA_EVENT),
    activity("external_correlation", EXTERNAL_CORRELATION),
    activity("environment", ENVIRONMENT),
    TableSpec {
        name: "pm_sampling",
        role: TableRole::Activity,
        columns: PM_SAMPLING,
        extra_are_metrics: true,
    },
    side("user_annotation", USER_ANNOTATION),
    side("thread_resource", THREAD_RESOURCE),
    side("graph_deps", GRAPH_DEPS),
    side("graph_event_record", GRAPH_EVENT_RECORD),
    side("window_info", WINDOW_INFO),
];

/// The spec of the table stored as `<name>.parquet`.
pub fn table_spec(name: &str) -> Option<&'static TableSpec> {
    TABLES.iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_and_columns_unique_per_table() {
        let mut names: Vec<_> = TABLES.iter().map(|t| t.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), TABLES.len());
        for t in TABLES {
            let mut cols: Vec<_> = t.columns.iter().map(|c| c.name).collect();
            cols.sort();
            cols.dedup();
            assert_eq!(cols.len(), t.columns.len(), "{}", t.name);
        }
    }

    #[test]
    fn kernel_keeps_producer_column_names() {
        let k = table_spec("kernel").unwrap();
        assert!(k.column("correlation_id").unwrap().required);
        assert!(!k.column("metadata").unwrap().required);
        assert_eq!(k.table_schema().field(8).name(), "name");
    }
}
