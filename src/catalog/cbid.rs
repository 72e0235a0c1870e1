//! The `cbid` table: CUPTI callback ids to API names, from data/cbid/*.tsv (CUPTI 13.0.85
//! headers; see data/README.md). Compiled in, so every window gets the same names.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Builder, StringViewBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;

use crate::error::Error;
use crate::Result;

/// Which CUPTI header the table was generated from.
pub const CBID_TABLE_VERSION: &str = "cupti-13.0.85";

const RUNTIME_TSV: &str = include_str!("../../data/cbid/cbid_runtime.tsv");
const DRIVER_TSV: &str = include_str!("../../data/cbid/cbid_driver.tsv");

/// `(domain, cbid, raw_name, name)` rows of both tables.
pub fn cbid_rows() -> impl Iterator<Item = (&'static str, i64, &'static str, &'static str)> {
    let parse = |domain: &'static str, tsv: &'static str| {
        tsv.lines().skip(1).filter_map(move |line| {
            let mut f = line.split('\t');
            let cbid = f.next()?.parse().ok()?;
            Some((domain, cbid, f.next()?, f.next()?))
        })
    };
    parse("runtime", RUNTIME_TSV).chain(parse("driver", DRIVER_TSV))
}

/// The `cbid` table.
pub fn cbid_table() -> Result<MemTable> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("domain", DataType::Utf8View, false),
        Field::new("cbid", DataType::Int64, false),
        Field::new("raw_name", DataType::Utf8View, false),
        Field::new("name", DataType::Utf8View, false),
    ]));
    let mut domain = StringViewBuilder::new();
    let mut cbid = Int64Builder::new();
    let mut raw = StringViewBuilder::new();
    let mut name = StringViewBuilder::new();
    for (d, c, r, n) in cbid_rows() {
        domain.append_value(d);
        cbid.append_value(c);
        raw.append_value(r);
        name.append_value(n);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(domain.finish()),
        Arc::new(cbid.finish()),
        Arc::new(raw.finish()),
        Arc::new(name.finish()),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    MemTable::try_new(schema, vec![vec![batch]]).map_err(|e| Error::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_points_of_the_spec_resolve() {
        let find = |d: &str, c: i64| cbid_rows().find(|r| r.0 == d && r.1 == c).map(|r| r.3);
        assert_eq!(find("runtime", 211), Some("cudaLaunchKernel"));
        assert_eq!(find("runtime", 311), Some("cudaGraphLaunch"));
        assert_eq!(find("driver", 307), Some("cuLaunchKernel"));
        assert_eq!(find("driver", 652), Some("cuLaunchKernelEx"));
    }
}
