//! Work spread over threads of its own, outside the query engine's pool.

/// `work` on each of `parts`, each on a thread of its own, side by side: the results in the
/// parts' order. A panic on a thread is raised again here.
pub fn on_threads<T: Send, R: Send>(parts: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
    let work = &work;
    std::thread::scope(|scope| {
        let running: Vec<_> = (parts.into_iter())
            .map(|part| scope.spawn(move || work(part)))
            .collect();
        running
            .into_iter()
            .map(|r| r.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The machine's cores (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
