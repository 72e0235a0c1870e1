//! The what-if (parameter `speedup`): `PATTERN=FACTOR` rules, `;` between them. An edge of
//! positive weight whose `bound_by` is PATTERN, or whose op's name is LIKE it, weighs FACTOR
//! times its own time, rounded to the ns (the smallest factor of the rules it matches).
//! Names are matched with Arrow's LIKE kernel, SQL's own, once per batch of nodes.

use datafusion::arrow::array::{Array, ArrayRef, Scalar, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::comparison::like;
use datafusion::error::{DataFusionError, Result as DfResult};

use super::graph::Edge;

pub(super) struct Speedup {
    rules: Vec<(String, f64)>,
    /// a what-if was asked for (the parameter is not ''): the path as measured is found too
    pub(super) asked: bool,
}

impl Speedup {
    /// The rules of `text`, trimmed of spaces as SQL's `trim`; '' is no what-if.
    pub(super) fn parse(text: &str) -> DfResult<Speedup> {
        let rules = (text.split(';'))
            .map(|rule| rule.trim_matches(' '))
            .filter(|rule| !rule.is_empty())
            .map(|rule| {
                let mut parts = rule.split('=');
                let pattern = parts.next().unwrap_or("").trim_matches(' ');
                let factor = parts.next().unwrap_or("").trim_matches(' ');
                let factor = factor.parse::<f64>().map_err(|_| {
                    DataFusionError::Plan(format!(
                        "speedup: `{rule}` is not PATTERN=FACTOR with FACTOR a number \
                         (e.g. speedup='%gemm%=0.8')"
                    ))
                })?;
                Ok((pattern.to_string(), factor))
            })
            .collect::<DfResult<_>>()?;
        Ok(Speedup {
            rules,
            asked: !text.is_empty(),
        })
    }

    /// The factors of a batch's nodes, their names given as `names` (one per node row).
    pub(super) fn factors(&self, names: &ArrayRef) -> DfResult<Factors<'_>> {
        let mut by_name: Vec<Option<f64>> = Vec::new();
        for (pattern, factor) in &self.rules {
            let pattern = cast(
                &StringArray::from(vec![pattern.as_str()]),
                names.data_type(),
            )?;
            let matched = like(names, &Scalar::new(pattern))?;
            by_name.resize(names.len(), None);
            for (row, slot) in by_name.iter_mut().enumerate() {
                if matched.is_valid(row) && matched.value(row) {
                    *slot = Some(slot.map_or(*factor, |f| f.min(*factor)));
                }
            }
        }
        Ok(Factors {
            rules: &self.rules,
            by_name,
        })
    }
}

pub(super) struct Factors<'a> {
    rules: &'a [(String, f64)],
    /// per node row, the smallest factor of the rules its name is LIKE (empty: no rules)
    by_name: Vec<Option<f64>>,
}

impl Factors<'_> {
    /// The edge's weight under the what-if.
    pub(super) fn weight(&self, e: &Edge) -> i64 {
        if e.weight <= 0 || self.rules.is_empty() {
            return e.weight;
        }
        let by_name = e.name.and_then(|row| self.by_name[row]);
        let by_cause = (self.rules.iter())
            .filter(|(pattern, _)| e.bound_by == Some(pattern.as_str()))
            .map(|(_, f)| *f);
        match by_cause.chain(by_name).reduce(f64::min) {
            Some(factor) => (e.weight as f64 * factor).round() as i64,
            None => e.weight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::critical_path::graph::Type;
    use std::sync::Arc;

    fn edge(weight: i64, name: Option<usize>, bound_by: Option<&'static str>) -> Edge {
        Edge {
            pass: 3,
            seq: 0,
            pid: None,
            tid: None,
            src: 0,
            dst: 1,
            ts: 0,
            end_ts: weight,
            kind: Type::Operator,
            weight,
            name,
            device_id: Some(0),
            stream_id: Some(7),
            bound_by,
        }
    }

    #[test]
    fn an_edge_takes_the_smallest_factor_of_the_rules_it_matches() {
        let names: ArrayRef = Arc::new(StringArray::from(vec![
            Some("sm90_gemm_a"),
            Some("ncclAllReduce"),
            None,
        ]));
        let speedup = Speedup::parse(" %gemm%=0.8 ; gpu_compute = 0.5;;nccl_=2").unwrap();
        let f = speedup.factors(&names).unwrap();
        let compute = Some("gpu_compute");
        // by name and by cause: the smaller factor; rounded half away from zero
        assert_eq!(f.weight(&edge(1001, Some(0), compute)), 501);
        assert_eq!(f.weight(&edge(1001, Some(0), Some("cpu"))), 801);
        // `_` is one character in LIKE: `nccl_` does not match ncclAllReduce
        let comm = Some("gpu_communication");
        assert_eq!(f.weight(&edge(100, Some(1), comm)), 100);
        // a NULL name, or no name, matches no pattern
        assert_eq!(f.weight(&edge(100, Some(2), comm)), 100);
        assert_eq!(f.weight(&edge(100, None, compute)), 50);
        // only time is shortened: a negative gap keeps its weight
        assert_eq!(f.weight(&edge(-100, Some(0), compute)), -100);
        assert!(speedup.asked);
    }

    #[test]
    fn no_rules_is_the_path_as_measured_and_a_bad_rule_names_itself() {
        let none = Speedup::parse("").unwrap();
        assert!(!none.asked);
        let names: ArrayRef = Arc::new(StringArray::from(vec!["k"]));
        let f = none.factors(&names).unwrap();
        assert_eq!(f.weight(&edge(100, Some(0), Some("gpu_compute"))), 100);
        let err = Speedup::parse("%gemm%=0.8;cpu").err().unwrap().to_string();
        assert!(err.contains("`cpu` is not PATTERN=FACTOR"), "{err}");
    }
}
