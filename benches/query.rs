//! Query latency in-process: opening a window and the first answer (the demo-sized window),
//! and the top-kernels aggregate on a larger synthetic window. The side-by-side comparison
//! with DuckDB is scripts/bench-query.sh.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use tracesql::synth::{write_window, SynthConfig};
use tracesql::window::Window;

const TOP_KERNELS: &str = "select name, count(*), sum(end_ns - start_ns) from kernel \
                           group by name order by 3 desc limit 20";

fn answer(rt: &tokio::runtime::Runtime, dir: &Path, sql: &str) -> usize {
    rt.block_on(async {
        let window = Window::open(dir).unwrap();
        let ctx = tracesql::catalog::open(&window).await.unwrap();
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        batches.iter().map(|b| b.num_rows()).sum()
    })
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    write_window(&SynthConfig::new(5_000, 1), &demo).unwrap();
    let big = tmp.path().join("big");
    write_window(&SynthConfig::new(2_500_000, 1), &big).unwrap();

    let mut group = c.benchmark_group("query");
    group.sample_size(20);
    group.bench_function("first_answer_demo", |b| {
        b.iter(|| answer(&rt, &demo, "select count(*) from cuda_sync"))
    });
    group.bench_function("top_kernels_1m_kernels", |b| {
        b.iter(|| answer(&rt, &big, TOP_KERNELS))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
