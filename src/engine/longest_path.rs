//! `longest_path(edges)`: the heaviest path through a graph without cycles, the step of the
//! critical path that SQL cannot take (a recursion over every node in dependency order).
//!
//! `edges` is one list per row (as `array_agg(named_struct('id', .., 'src', .., 'dst', ..,
//! 'weight', ..))` makes it, one list per step); the result is the ids of the path's edges,
//! first to last. Weights are ns and never negative; a path may start at any node.
//!
//! Ties resolve as networkx's `dag_longest_path`, which HTA uses: a node's best predecessor is
//! the first one (in the edges' order) of the largest distance; the path ends at the first node
//! (in dependency order, nodes taken as they first appear) of the largest distance.
//!
//! ```text
//!   a ──3──► b ──1──► d          dist: a 0, b 3, c 2, d max(3+1, 2+5) = 7
//!   └──2──► c ──5───┘            path: a → c → d (edges 2, 4)
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, ListArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The SQL function `longest_path(list of {id, src, dst, weight})` -> list of edge ids.
pub fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(LongestPath {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LongestPath {
    signature: Signature,
}

fn edge_fields() -> Fields {
    ["id", "src", "dst", "weight"]
        .into_iter()
        .map(|name| Field::new(name, DataType::Int64, true))
        .collect()
}

impl ScalarUDFImpl for LongestPath {
    fn name(&self) -> &str {
        "longest_path"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        let wanted = DataType::Struct(edge_fields());
        match &args[0] {
            DataType::List(item) if item.data_type() == &wanted => Ok(DataType::List(Arc::new(
                Field::new("item", DataType::Int64, true),
            ))),
            other => Err(DataFusionError::Plan(format!(
                "longest_path takes a list of {{id, src, dst, weight}} (BIGINT), not {other}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let lists = arrays[0].as_list::<i32>();
        let mut ids = Vec::new();
        let mut offsets = vec![0i32];
        for row in 0..lists.len() {
            if lists.is_valid(row) {
                let edges = lists.value(row);
                ids.extend(path_of(edges.as_struct())?);
            }
            offsets.push(i32::try_from(ids.len()).map_err(|_| {
                DataFusionError::Execution("longest_path: more than 2^31 path edges".into())
            })?);
        }
        let item = Arc::new(Field::new("item", DataType::Int64, true));
        let out = ListArray::try_new(
            item,
            OffsetBuffer::new(offsets.into()),
            Arc::new(Int64Array::from(ids)),
            lists.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// One edge, its endpoints numbered in order of first appearance.
struct Edge {
    id: i64,
    src: usize,
    dst: usize,
    weight: i64,
}

fn path_of(edges: &StructArray) -> DfResult<Vec<i64>> {
    let column = |name: &str| {
        edges
            .column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
    };
    let (id, src, dst, weight) = (column("id"), column("src"), column("dst"), column("weight"));
    let mut node_of: HashMap<i64, usize> = HashMap::new();
    let mut number = |key: i64| {
        let next = node_of.len();
        *node_of.entry(key).or_insert(next)
    };
    let mut list = Vec::with_capacity(edges.len());
    for i in 0..edges.len() {
        if src.is_null(i) || dst.is_null(i) || weight.is_null(i) {
            return Err(DataFusionError::Execution(
                "longest_path: an edge without its src, dst or weight".into(),
            ));
        }
        list.push(Edge {
            id: id.value(i),
            src: number(src.value(i)),
            dst: number(dst.value(i)),
            weight: weight.value(i),
        });
    }
    longest(&list, node_of.len())
}

/// The path's edge ids; an error names a cycle.
fn longest(edges: &[Edge], nodes: usize) -> DfResult<Vec<i64>> {
    let mut incoming: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    let mut outgoing: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for (e, edge) in edges.iter().enumerate() {
        incoming[edge.dst].push(e);
        outgoing[edge.src].push(e);
    }
    // Kahn's order: nodes without predecessors as they first appear, then each as its last
    // predecessor is done.
    let mut waiting: Vec<usize> = incoming.iter().map(Vec::len).collect();
    let mut ready: VecDeque<usize> = (0..nodes).filter(|&n| waiting[n] == 0).collect();
    // per node: (distance, the edge that reaches it that far)
    let mut best: Vec<(i64, Option<usize>)> = vec![(0, None); nodes];
    let mut end: Option<usize> = None;
    let mut done = 0;
    while let Some(node) = ready.pop_front() {
        done += 1;
        for &e in &incoming[node] {
            let reach = best[edges[e].src].0 + edges[e].weight;
            if best[node].1.is_none() || reach > best[node].0 {
                best[node] = (reach, Some(e));
            }
        }
        if best[node].0 < 0 {
            best[node] = (0, None);
        }
        if end.map_or(true, |n| best[node].0 > best[n].0) {
            end = Some(node);
        }
        for &e in &outgoing[node] {
            waiting[edges[e].dst] -= 1;
            if waiting[edges[e].dst] == 0 {
                ready.push_back(edges[e].dst);
            }
        }
    }
    if done < nodes {
        return Err(DataFusionError::Execution(format!(
            "longest_path: the graph has a cycle ({} of {nodes} nodes on or after it)",
            nodes - done
        )));
    }
    let mut path = Vec::new();
    let mut at = end;
    while let Some(node) = at {
        match best[node].1 {
            Some(e) => {
                path.push(edges[e].id);
                at = Some(edges[e].src);
            }
            None => at = None,
        }
    }
    path.reverse();
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(list: &[(i64, i64, i64, i64)]) -> Vec<Edge> {
        let mut keys = Vec::new();
        let mut number = |k: i64| match keys.iter().position(|&x| x == k) {
            Some(i) => i,
            None => {
                keys.push(k);
                keys.len() - 1
            }
        };
        list.iter()
            .map(|&(id, src, dst, weight)| Edge {
                id,
                src: number(src),
                dst: number(dst),
                weight,
            })
            .collect()
    }

    fn path(list: &[(i64, i64, i64, i64)]) -> DfResult<Vec<i64>> {
        let nodes = list
            .iter()
            .flat_map(|e| [e.1, e.2])
            .collect::<std::collections::HashSet<_>>()
            .len();
        longest(&edges(list), nodes)
    }

    #[test]
    fn the_heaviest_chain_wins_over_the_longest_in_edges() {
        // the module's figure: a→b→d weighs 4, a→c→d weighs 7
        let list = [
            (1, 'a' as i64, 'b' as i64, 3),
            (2, 'a' as i64, 'c' as i64, 2),
            (3, 'b' as i64, 'd' as i64, 1),
            (4, 'c' as i64, 'd' as i64, 5),
        ];
        assert_eq!(path(&list).unwrap(), vec![2, 4]);
        // a chain of many light edges against one heavy edge
        let list = [(1, 1, 2, 1), (2, 2, 3, 1), (3, 3, 4, 1), (4, 1, 4, 4)];
        assert_eq!(path(&list).unwrap(), vec![4]);
    }

    #[test]
    fn ties_take_the_first_predecessor_and_the_first_end() {
        // two ways of weight 2 into node 4: the edge listed first wins
        let list = [(1, 1, 2, 1), (2, 1, 3, 1), (3, 3, 4, 1), (4, 2, 4, 1)];
        assert_eq!(path(&list).unwrap(), vec![2, 3]);
        // two separate chains of weight 5: the path ends at the node reached first
        let list = [(1, 10, 11, 5), (2, 20, 21, 5)];
        assert_eq!(path(&list).unwrap(), vec![1]);
    }

    #[test]
    fn a_cycle_is_an_error_and_no_edges_is_an_empty_path() {
        let err = path(&[(1, 1, 2, 1), (2, 2, 1, 1)]).unwrap_err();
        assert!(err.to_string().contains("has a cycle"), "{err}");
        assert_eq!(path(&[]).unwrap(), Vec::<i64>::new());
    }

    #[tokio::test]
    async fn the_function_finds_one_path_per_list_in_sql() {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_udf(udf());
        let sql = "SELECT g, longest_path(array_agg(named_struct('id', id, 'src', s, 'dst', d, \
                   'weight', w) ORDER BY id)) AS path \
                   FROM (VALUES (1, 1, 10, 11, 3), (1, 2, 10, 12, 2), (1, 3, 11, 13, 1), \
                   (1, 4, 12, 13, 5), (2, 5, 1, 2, 9)) AS t(g, id, s, d, w) \
                   GROUP BY g ORDER BY g";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let paths = batches[0].column(1).as_list::<i32>();
        let ids = |row: usize| -> Vec<i64> {
            paths
                .value(row)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        };
        assert_eq!(ids(0), vec![2, 4]);
        assert_eq!(ids(1), vec![5]);
    }
}
