//! `longest_path(edges)`: the heaviest path through a graph without cycles, the step of the
//! critical path that SQL cannot take (a recursion over every node in dependency order).
//!
//! `edges` is one list of structs per row (as `array_agg(named_struct('src', .., 'dst', ..,
//! 'weight', .., ...))` makes it, one list per step), with BIGINT fields `src` and `dst` (the
//! nodes) and `weight` (ns), and any others (an edge id to join on); the result is the path's
//! edges, first to last, in the same shape. A path may start at any node. The edges are taken
//! in the order of a BIGINT field `edge_id` when they have one, else as listed: sorting here
//! spares `array_agg(.. ORDER BY ..)`, which took 3 s for 327 k edges in 517 steps (unordered:
//! 0.02 s). The graph is held as flat arrays (nodes numbered through a fast hash, each node's
//! edges as a slice of one list): with a hash map keyed by SipHash and two vectors per node,
//! the paths of a 1 M-event window's 5 k steps took 2.2 s.
//!
//! Ties resolve as networkx's `dag_longest_path`, which HTA uses: a node's best predecessor is
//! the first one (in the edges' order) of the largest distance; the path ends at the first node
//! (in dependency order, nodes taken as they first appear) of the largest distance.
//!
//! ```text
//!   a ──3──► b ──1──► d          dist: a 0, b 3, c 2, d max(3+1, 2+5) = 7
//!   └──2──► c ──5───┘            path: a → c → d (the edges of weight 2 and 5)
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, ListArray, StructArray, UInt32Array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The SQL function `longest_path(list of {src, dst, weight, ...})` -> the path's edges.
pub fn udf() -> ScalarUDF {
    ScalarUDF::new_from_impl(LongestPath {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct LongestPath {
    signature: Signature,
}

const NODE_FIELDS: [&str; 3] = ["src", "dst", "weight"];

impl ScalarUDFImpl for LongestPath {
    fn name(&self) -> &str {
        "longest_path"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> DfResult<DataType> {
        let edges_ok = match &args[0] {
            DataType::List(item) => match item.data_type() {
                DataType::Struct(fields) => NODE_FIELDS.iter().all(|name| {
                    fields
                        .find(name)
                        .is_some_and(|(_, f)| f.data_type() == &DataType::Int64)
                }),
                _ => false,
            },
            _ => false,
        };
        if !edges_ok {
            return Err(DataFusionError::Plan(format!(
                "longest_path takes a list of structs with BIGINT src, dst and weight, not {}",
                args[0]
            )));
        }
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let lists = arrays[0].as_list::<i32>();
        let mut picked: Vec<u32> = Vec::new();
        let mut offsets = vec![0i32];
        for row in 0..lists.len() {
            if lists.is_valid(row) {
                let start = lists.value_offsets()[row] as usize;
                let edges = lists.value(row);
                let path = path_of(edges.as_struct())?;
                picked.extend(path.into_iter().map(|i| (start + i) as u32));
            }
            offsets.push(i32::try_from(picked.len()).map_err(|_| {
                DataFusionError::Execution("longest_path: more than 2^31 path edges".into())
            })?);
        }
        let field = match args.return_field.data_type() {
            DataType::List(field) => field.clone(),
            other => unreachable!("return_type gives a list, not {other}"),
        };
        let values = take(lists.values().as_ref(), &UInt32Array::from(picked), None)?;
        let out = ListArray::try_new(
            field,
            OffsetBuffer::new(offsets.into()),
            values,
            lists.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// One edge, its endpoints numbered in order of first appearance.
struct Edge {
    src: usize,
    dst: usize,
    weight: i64,
}

/// The positions in `edges` of the path's edges.
fn path_of(edges: &StructArray) -> DfResult<Vec<usize>> {
    let column = |name: &str| {
        edges
            .column_by_name(name)
            .expect("return_type checked the fields")
            .as_primitive::<Int64Type>()
    };
    let (src, dst, weight) = (column("src"), column("dst"), column("weight"));
    // the edges' order: by edge_id (nulls first, as listed among equals), else as listed
    let mut order: Vec<usize> = (0..edges.len()).collect();
    if let Some(id) = edges.column_by_name("edge_id") {
        if let Some(id) = id.as_primitive_opt::<Int64Type>() {
            order.sort_unstable_by_key(|&i| (id.is_valid(i).then(|| id.value(i)), i));
        }
    }
    let mut node_of: HashMap<i64, usize, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(edges.len(), Default::default());
    let mut number = |key: i64| {
        let next = node_of.len();
        *node_of.entry(key).or_insert(next)
    };
    let mut list = Vec::with_capacity(edges.len());
    for &i in &order {
        if src.is_null(i) || dst.is_null(i) || weight.is_null(i) {
            return Err(DataFusionError::Execution(
                "longest_path: an edge without its src, dst or weight".into(),
            ));
        }
        list.push(Edge {
            src: number(src.value(i)),
            dst: number(dst.value(i)),
            weight: weight.value(i),
        });
    }
    let path = longest(&list, node_of.len())?;
    Ok(path.into_iter().map(|e| order[e]).collect())
}

/// Edge positions grouped by node, each group in edge order: node `n`'s are
/// `items[starts[n]..starts[n + 1]]`.
struct ByNode {
    starts: Vec<usize>,
    items: Vec<usize>,
}

impl ByNode {
    /// Group the edges by `node_of` (one node per edge, in edge order).
    fn new(nodes: usize, node_of: impl Iterator<Item = usize> + Clone) -> ByNode {
        let mut starts = vec![0; nodes + 1];
        for n in node_of.clone() {
            starts[n + 1] += 1;
        }
        for n in 0..nodes {
            starts[n + 1] += starts[n];
        }
        let mut next = starts.clone();
        let mut items = vec![0; starts[nodes]];
        for (e, n) in node_of.enumerate() {
            items[next[n]] = e;
            next[n] += 1;
        }
        ByNode { starts, items }
    }

    fn of(&self, node: usize) -> &[usize] {
        &self.items[self.starts[node]..self.starts[node + 1]]
    }
}

/// The positions of the path's edges in `edges`; an error names a cycle.
fn longest(edges: &[Edge], nodes: usize) -> DfResult<Vec<usize>> {
    let incoming = ByNode::new(nodes, edges.iter().map(|e| e.dst));
    let outgoing = ByNode::new(nodes, edges.iter().map(|e| e.src));
    // Kahn's order: nodes without predecessors as they first appear, then each as its last
    // predecessor is done.
    let mut waiting: Vec<usize> = (0..nodes).map(|n| incoming.of(n).len()).collect();
    let mut ready: VecDeque<usize> = (0..nodes).filter(|&n| waiting[n] == 0).collect();
    // per node: (distance, the edge that reaches it that far)
    let mut best: Vec<(i64, Option<usize>)> = vec![(0, None); nodes];
    let mut end: Option<usize> = None;
    let mut done = 0;
    while let Some(node) = ready.pop_front() {
        done += 1;
        for &e in incoming.of(node) {
            let reach = best[edges[e].src].0 + edges[e].weight;
            if best[node].1.is_none() || reach > best[node].0 {
                best[node] = (reach, Some(e));
            }
        }
        if best[node].0 < 0 {
            best[node] = (0, None);
        }
        if end.is_none_or(|n| best[node].0 > best[n].0) {
            end = Some(node);
        }
        for &e in outgoing.of(node) {
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
                path.push(e);
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

    /// The path through edges (src, dst, weight), as positions in the list (from 1).
    fn path(list: &[(i64, i64, i64)]) -> DfResult<Vec<usize>> {
        let mut keys: Vec<i64> = Vec::new();
        let mut number = |k: i64| match keys.iter().position(|&x| x == k) {
            Some(i) => i,
            None => {
                keys.push(k);
                keys.len() - 1
            }
        };
        let edges: Vec<Edge> = list
            .iter()
            .map(|&(src, dst, weight)| Edge {
                src: number(src),
                dst: number(dst),
                weight,
            })
            .collect();
        let path = longest(&edges, keys.len())?;
        Ok(path.into_iter().map(|i| i + 1).collect())
    }

    #[test]
    fn edges_are_taken_in_edge_id_order_whatever_the_list_order() {
        use datafusion::arrow::array::{ArrayRef, Int64Array};
        use datafusion::arrow::datatypes::{Field, Fields};
        // two ways of equal weight into node 3, listed against edge_id order: 1 (1→2, 0),
        // 2 (2→3, 5), 3 (1→3, 5); the first by edge_id, 2, is node 3's best predecessor
        let (ids, src, dst, weight) = ([3, 2, 1], [1, 2, 1], [3, 3, 2], [5, 5, 0]);
        let column = |v: [i64; 3]| Arc::new(Int64Array::from(v.to_vec())) as ArrayRef;
        let names = ["edge_id", "src", "dst", "weight"];
        let fields: Fields = names
            .iter()
            .map(|n| Field::new(*n, DataType::Int64, true))
            .collect();
        let edges = StructArray::new(
            fields,
            vec![column(ids), column(src), column(dst), column(weight)],
            None,
        );
        let path: Vec<i64> = path_of(&edges)
            .unwrap()
            .into_iter()
            .map(|i| ids[i])
            .collect();
        assert_eq!(path, vec![1, 2]);
    }

    #[test]
    fn the_heaviest_chain_wins_over_the_one_of_more_edges() {
        // the module's figure: a→b→d weighs 4, a→c→d weighs 7
        let (a, b, c, d) = (1, 2, 3, 4);
        assert_eq!(
            path(&[(a, b, 3), (a, c, 2), (b, d, 1), (c, d, 5)]).unwrap(),
            vec![2, 4]
        );
        // a chain of many light edges against one heavy edge
        let list = [(1, 2, 1), (2, 3, 1), (3, 4, 1), (1, 4, 4)];
        assert_eq!(path(&list).unwrap(), vec![4]);
    }

    #[test]
    fn ties_take_the_first_predecessor_and_the_first_end() {
        // two ways of weight 2 into node 4: the edge listed first wins
        let list = [(1, 2, 1), (1, 3, 1), (3, 4, 1), (2, 4, 1)];
        assert_eq!(path(&list).unwrap(), vec![2, 3]);
        // two separate chains of weight 5: the path ends at the node reached first
        assert_eq!(path(&[(10, 11, 5), (20, 21, 5)]).unwrap(), vec![1]);
    }

    #[test]
    fn a_cycle_is_an_error_and_no_edges_is_an_empty_path() {
        let err = path(&[(1, 2, 1), (2, 1, 1)]).unwrap_err();
        assert!(err.to_string().contains("has a cycle"), "{err}");
        assert_eq!(path(&[]).unwrap(), Vec::<usize>::new());
    }

    #[tokio::test]
    async fn the_function_returns_each_groups_path_edges_with_all_their_fields() {
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_udf(udf());
        let sql = "SELECT g, unnest(longest_path(array_agg(named_struct('src', s, 'dst', d, \
                   'weight', w, 'label', l) ORDER BY l)))['label'] AS label \
                   FROM (VALUES (1, 10, 11, 3, 'ab'), (1, 10, 12, 2, 'ac'), (1, 11, 13, 1, 'bd'), \
                   (1, 12, 13, 5, 'cd'), (2, 1, 2, 9, 'x')) AS t(g, s, d, w, l) \
                   GROUP BY g ORDER BY g, label";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let batch =
            datafusion::arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        let groups = batch.column(0).as_primitive::<Int64Type>();
        let labels = batch.column(1).as_string_view_opt().map_or_else(
            || {
                let a = batch.column(1).as_string::<i32>();
                (0..a.len())
                    .map(|i| a.value(i).to_string())
                    .collect::<Vec<_>>()
            },
            |a| (0..a.len()).map(|i| a.value(i).to_string()).collect(),
        );
        let rows: Vec<(i64, String)> = (0..batch.num_rows())
            .map(|i| (groups.value(i), labels[i].clone()))
            .collect();
        let want = [(1, "ac"), (1, "cd"), (2, "x")].map(|(g, l)| (g, l.to_string()));
        assert_eq!(rows, want);
        let wrong = ctx
            .sql("SELECT longest_path(array_agg(named_struct('src', 1, 'dst', 2)))")
            .await
            .unwrap_err();
        assert!(
            wrong.to_string().contains("BIGINT src, dst and weight"),
            "{wrong}"
        );
    }
}
