//! CUDA graphs: fixed node sets built once, replayed by cudaGraphLaunch; writes graphed
//! kernel/memcpy/memset/host/event-node rows and the graph_deps / graph_event_record tables.

use super::catalog::{rt, Step, GRAPH_ANNOTATIONS, HOST_FNS, LANE_NAMES};
use super::gpu::{Api, GpuRow};
use super::rng::Rng;
use super::sim::{Sim, GRAPH};
use super::table::V;
use super::SynthFeatures;

#[derive(Clone, Copy, Debug)]
pub enum NodeKind {
    Kernel(u16),
    Memcpy,
    Memset,
    Host(usize),
    /// Event-record node with its cudaEvent_t handle.
    Event(u64),
}

pub struct Node {
    pub kind: NodeKind,
    pub gnid: i64,
    /// Predecessors (indexes into the graph's nodes, all earlier).
    pub preds: Vec<usize>,
    pub annotation: Option<&'static str>,
    pub lane: Option<usize>,
}

pub struct Graph {
    pub dev: usize,
    pub proc_: usize,
    pub nodes: Vec<Node>,
    pub replays: u64,
    /// End of the latest replay's last node.
    pub last_end: i64,
}

use Step::{Nccl, D2D, K};

/// Node templates of the graphs (kernel steps, memcpy, memset).
static TEMPLATES: &[&[Step]] = &[
    &[
        Step::Memset,
        K(7),
        K(3),
        K(0),
        K(17),
        K(3),
        K(1),
        K(26),
        K(3),
        K(0),
        K(7),
        K(10),
    ],
    &[
        K(8),
        K(9),
        K(4),
        K(6),
        K(25),
        K(2),
        K(18),
        K(19),
        K(4),
        K(12),
        Nccl(32),
        K(0),
        K(14),
    ],
    &[Nccl(34), Nccl(33), K(20), K(20), D2D, K(21), K(27), K(22)],
];
static GRAPH_IDS: &[i64] = &[3, 5, 8];

/// The graphs of a window: graph `j` runs on device `j % devices`, owned by that device's process.
pub fn build_graphs(rng: &mut Rng, f: &SynthFeatures, devices: usize, procs: usize) -> Vec<Graph> {
    let mut out = Vec::new();
    for (j, tpl) in TEMPLATES.iter().enumerate() {
        let id = GRAPH_IDS[j];
        let dev = j % devices;
        let mut kinds: Vec<NodeKind> = tpl
            .iter()
            .map(|s| match *s {
                K(k) | Nccl(k) | Step::Tri(k) => NodeKind::Kernel(k),
                Step::Memset => NodeKind::Memset,
                _ => NodeKind::Memcpy,
            })
            .collect();
        if f.event_nodes {
            let handle = 0x5555_5b2c_3a00u64 + 0x40 * (3 * j as u64 + 1);
            kinds.insert(kinds.len() / 2, NodeKind::Event(handle));
        }
        if f.host_nodes {
            kinds.push(NodeKind::Host(j % HOST_FNS.len()));
        }
        let nodes = kinds
            .into_iter()
            .enumerate()
            .map(|(i, kind)| {
                let mut preds = Vec::new();
                if i > 0 {
                    preds.push(i - 1);
                }
                if i >= 3 && rng.chance(250) {
                    preds.push(i - 3);
                }
                let is_nccl = matches!(kind, NodeKind::Kernel(k) if (32..=36).contains(&k));
                let is_op = matches!(
                    kind,
                    NodeKind::Kernel(_) | NodeKind::Memcpy | NodeKind::Memset
                );
                let annotation = if is_nccl {
                    Some(GRAPH_ANNOTATIONS[0])
                } else if is_op && rng.chance(350) {
                    Some(*rng.pick(&GRAPH_ANNOTATIONS[1..]))
                } else {
                    None
                };
                let lane = if is_nccl {
                    Some(1)
                } else if is_op && rng.chance(400) {
                    Some(if j == 2 { 2 } else { 0 })
                } else {
                    None
                };
                Node {
                    kind,
                    gnid: (id << 32) | (i as i64 + 1),
                    preds,
                    annotation,
                    lane,
                }
            })
            .collect();
        out.push(Graph {
            dev,
            proc_: dev % procs,
            nodes,
            replays: 0,
            last_end: 0,
        });
    }
    out
}

impl Sim<'_> {
    /// One cudaGraphLaunch: every node of graph `g` runs with the launch's correlation id
    /// (host nodes report 0 when queued behind an in-flight replay, the CUPTI bug).
    pub fn replay(&mut self, g: usize) {
        let saved_dev = self.cur_dev;
        self.cur_dev = self.graphs[g].dev;
        let dur = self.rng.range(6_000, 18_000);
        let (corr, s, _) = self.api(Api::Runtime, rt::GRAPH_LAUNCH, 0, dur);
        let in_flight = self.graphs[g].last_end > s;
        let base =
            (s + self.rng.range(4_000, 9_000)).max(self.devs[self.cur_dev].free[GRAPH] + 1_000);
        let n = self.graphs[g].nodes.len();
        let mut ends = vec![0i64; n];
        for i in 0..n {
            let node = &self.graphs[g].nodes[i];
            let (kind, gnid, annotation) = (node.kind, node.gnid, node.annotation);
            let lane = node
                .lane
                .filter(|_| self.f.lanes)
                .map(|l| (l as i64, LANE_NAMES[l]));
            let ready = node
                .preds
                .iter()
                .map(|&p| ends[p] + 600)
                .fold(base, i64::max);
            let start = self.gpu_start(ready, None);
            let mut row = GpuRow {
                start,
                end: start,
                dev: self.cur_dev,
                slot: GRAPH,
                corr,
                gnid,
                annotation,
                lane,
            };
            match kind {
                NodeKind::Kernel(k) => {
                    row.end = start + self.kernel_dur(k as usize);
                    self.kernel_row(&row, k as usize, 0);
                }
                NodeKind::Memcpy => {
                    let (bytes, dur) = self.copy_shape(8);
                    row.end = start + dur;
                    self.memcpy_row(&row, 8, bytes);
                }
                NodeKind::Memset => {
                    let bytes = 1 << self.rng.range(12, 22);
                    row.end = start + bytes / 2_000 + 1_200;
                    self.memset_row(&row, bytes);
                }
                NodeKind::Host(h) => {
                    row.end = start + self.rng.range(2_000, 15_000);
                    if in_flight {
                        row.corr = 0;
                    }
                    self.host_row(&row, h);
                }
                NodeKind::Event(_) => self.event_node_row(&row),
            }
            ends[i] = row.end;
        }
        let end = ends.iter().copied().max().unwrap_or(base);
        let d = &mut self.devs[self.cur_dev];
        d.free[GRAPH] = d.free[GRAPH].max(end);
        self.max_ts = self.max_ts.max(end);
        self.graphs[g].last_end = end;
        if self.graphs[g].replays == 0 {
            self.first_replay_tables(g);
        }
        self.graphs[g].replays += 1;
        self.cur_dev = saved_dev;
    }

    fn host_row(&mut self, r: &GpuRow<'_>, h: usize) {
        let d = &self.devs[r.dev];
        let p = &self.procs[self.cur_proc];
        let lane = self.lane_pair(r);
        let (name, addr) = HOST_FNS[h];
        self.tb.host_node.push(&[
            V::I(r.start),
            V::I(r.end),
            V::I(r.dev as i64),
            V::I(d.ctx),
            V::I(d.streams[r.slot]),
            V::I(r.corr),
            V::I(r.gnid),
            V::I(r.gnid >> 32),
            r.annotation.map_or(V::N, V::S),
            V::I(p.pid),
            V::I(p.host_tid),
            V::S(name),
            V::I(addr),
            lane.0,
            lane.1,
        ]);
    }

    fn event_node_row(&mut self, r: &GpuRow<'_>) {
        let d = &self.devs[r.dev];
        let lane = self.lane_pair(r);
        self.tb.event_node.push(&[
            V::I(r.start),
            V::I(r.start),
            V::I(r.dev as i64),
            V::I(d.ctx),
            V::I(d.streams[r.slot]),
            V::I(r.corr),
            V::I(r.gnid),
            V::I(r.gnid >> 32),
            r.annotation.map_or(V::N, V::S),
            lane.0,
            lane.1,
        ]);
    }

    fn lane_pair<'a>(&self, r: &GpuRow<'a>) -> (V<'a>, V<'a>) {
        match r.lane {
            Some((ord, name)) => (V::I(100_000 + ord), V::S(name)),
            None => (V::I(self.devs[r.dev].streams[r.slot]), V::N),
        }
    }

    /// graph_deps keys (nodes with a predecessor) and event-record handles, in first-seen order.
    fn first_replay_tables(&mut self, g: usize) {
        let graph = &self.graphs[g];
        if self.f.graph_deps {
            for node in graph.nodes.iter().filter(|n| !n.preds.is_empty()) {
                for (j, &p) in node.preds.iter().enumerate() {
                    self.tb.graph_deps.push(&[
                        V::I(node.gnid),
                        V::I(graph.nodes[p].gnid),
                        V::I(j as i64),
                        V::I(self.deps_ordinal as i64),
                    ]);
                }
                self.deps_ordinal += 1;
            }
        }
        for node in &graph.nodes {
            if let NodeKind::Event(handle) = node.kind {
                self.tb
                    .graph_event_record
                    .push(&[V::I(node.gnid), V::U(handle)]);
            }
        }
    }
}
