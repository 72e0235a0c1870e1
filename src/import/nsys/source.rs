//! The nsys tables the mapping reads, with nsys's own table and column names: which are
//! required, which optional, and the type each column is loaded as. Both readers (SQLite,
//! parquetdir) load exactly these columns, so the SQL of sql/import/nsys/ sees one shape
//! whatever the schema version (2.x or 3.x) of the report.

/// The type a column is loaded as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    Text,
}

/// One column: nsys's name, its type, whether a report must have it.
#[derive(Clone, Copy, Debug)]
pub struct Col {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
}

/// One table: registered under nsys's name; an absent optional table is an empty one.
#[derive(Clone, Copy, Debug)]
pub struct Source {
    pub name: &'static str,
    pub required: bool,
    pub columns: &'static [Col],
}

const fn req(name: &'static str) -> Col {
    Col {
        name,
        ty: Ty::Int,
        required: true,
    }
}

const fn opt(name: &'static str) -> Col {
    Col {
        name,
        ty: Ty::Int,
        required: false,
    }
}

const fn text(name: &'static str, required: bool) -> Col {
    Col {
        name,
        ty: Ty::Text,
        required,
    }
}

const fn table(name: &'static str, columns: &'static [Col]) -> Source {
    Source {
        name,
        required: false,
        columns,
    }
}

pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SESSION_START: &str = "TARGET_INFO_SESSION_START_TIME";

/// The GPU-op tables: a report needs one of them, and a process with rows in one of them
/// gets a window.
pub const GPU_OPS: [&str; 3] = [KERNEL, MEMCPY, MEMSET];

/// The tables that can be large (a row per GPU op or API call): an SQLite report's are
/// streamed through their mappings in batches, never held whole (`feed`); the others are
/// loaded.
pub const STREAMED: [&str; 7] = [
    KERNEL,
    MEMCPY,
    MEMSET,
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
    "PROFILER_OVERHEAD",
];

/// Every table the mapping reads. Text columns are loaded lossily (invalid UTF-8 becomes
/// U+FFFD), integer columns as Int64 (a value that is not an integer reads as NULL).
pub static SOURCES: &[Source] = &[
    Source {
        name: "StringIds",
        required: true,
        columns: &[req("id"), text("value", true)],
    },
    table(
        KERNEL,
        &[
            req("start"),
            req("end"),
            req("deviceId"),
            req("contextId"),
            req("streamId"),
            req("correlationId"),
            req("globalPid"),
            opt("demangledName"),
            opt("shortName"),
            req("gridX"),
            req("gridY"),
            req("gridZ"),
            req("blockX"),
            req("blockY"),
            req("blockZ"),
            req("registersPerThread"),
            req("staticSharedMemory"),
            req("dynamicSharedMemory"),
            opt("graphNodeId"),
            opt("graphId"),
        ],
    ),
    table(
        MEMCPY,
        &[
            req("start"),
            req("end"),
            req("deviceId"),
            req("contextId"),
            req("streamId"),
            req("correlationId"),
            req("globalPid"),
            req("bytes"),
            req("copyKind"),
            opt("srcKind"),
            opt("dstKind"),
            opt("srcDeviceId"),
            opt("dstDeviceId"),
            opt("graphNodeId"),
            opt("graphId"),
        ],
    ),
    table(
        MEMSET,
        &[
            req("start"),
            req("end"),
            req("deviceId"),
            req("contextId"),
            req("streamId"),
            req("correlationId"),
            req("globalPid"),
            req("bytes"),
            opt("value"),
            opt("memKind"),
            opt("graphNodeId"),
            opt("graphId"),
        ],
    ),
    table(
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        &[
            req("start"),
            req("end"),
            req("globalTid"),
            req("correlationId"),
            req("nameId"),
            opt("eventClass"),
        ],
    ),
    table(
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        &[
            req("start"),
            req("end"),
            opt("deviceId"),
            req("contextId"),
            req("streamId"),
            req("correlationId"),
            req("globalPid"),
            req("syncType"),
            opt("eventId"),
        ],
    ),
    table(
        "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        &[
            opt("start"),
            opt("end"),
            req("deviceId"),
            req("contextId"),
            opt("streamId"),
            req("correlationId"),
            req("globalPid"),
            opt("eventId"),
        ],
    ),
    table(
        "PROFILER_OVERHEAD",
        &[req("start"), req("end"), req("globalTid"), opt("nameId")],
    ),
    table(
        "NVTX_EVENTS",
        &[
            req("start"),
            opt("end"),
            req("eventType"),
            text("text", false),
            opt("textId"),
            req("globalTid"),
        ],
    ),
    table("ThreadNames", &[req("nameId"), req("globalTid")]),
    table(
        "PROCESSES",
        &[req("globalPid"), opt("pid"), text("name", false)],
    ),
    table(SESSION_START, &[req("utcEpochNs")]),
    table(
        "TARGET_INFO_GPU",
        &[
            req("id"),
            text("name", false),
            opt("totalMemory"),
            opt("smCount"),
            opt("computeMajor"),
            opt("computeMinor"),
            opt("maxThreadsPerBlock"),
            opt("maxRegistersPerBlock"),
            opt("maxRegistersPerSm"),
            opt("threadsPerWarp"),
            opt("maxShmemPerBlock"),
            opt("maxShmemPerSm"),
            opt("maxShmemPerBlockOptin"),
            opt("maxWarpsPerSm"),
        ],
    ),
    table("ENUM_CUDA_MEMCPY_OPER", &[req("id"), text("name", true)]),
    table("ENUM_CUDA_MEM_KIND", &[req("id"), text("name", true)]),
    table("ENUM_CUPTI_SYNC_TYPE", &[req("id"), text("name", true)]),
];

/// The source table named `name` (nsys's spelling; SQLite names match case-insensitively).
pub fn source(name: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_op_table_is_a_source_with_a_process_column() {
        for name in GPU_OPS {
            let s = source(name).expect("listed");
            assert!(s
                .columns
                .iter()
                .any(|c| c.name == "globalPid" && c.required));
        }
        assert!(source("stringids").is_some_and(|s| s.required));
        for name in STREAMED {
            assert!(source(name).is_some_and(|s| !s.required), "{name}");
        }
    }
}
