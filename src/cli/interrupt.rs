//! Ctrl-C for the commands that run to an end (query, export, report, import, ...): the
//! process exits at once with status 130, after removing the temporary files and folders of
//! the outputs it was writing (`tracesql::file::abandon_unfinished`), so nothing half-written
//! is left. The shell and `convert` cancel in their own way and do not use this.
//!
//! Every thread blocks SIGINT and one thread waits for it with `sigwait`: the exit then
//! happens whatever the other threads are doing (a long poll that never yields, a lock held,
//! a blocking write), which a handler on the async runtime could not promise.

/// Block SIGINT in this thread and the threads it starts after, and start the thread that
/// waits for it. Call before the runtime starts its threads.
pub fn exit_on_ctrl_c() {
    // SAFETY: sigset_t is plain data that sigemptyset initialises; pthread_sigmask and
    // sigwait are called with valid pointers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return; // not blocked: Ctrl-C keeps its default (the process ends)
        }
        let waiter = std::thread::Builder::new()
            .name("ctrl-c".into())
            .spawn(move || {
                let mut signal = 0;
                if libc::sigwait(&set, &mut signal) == 0 {
                    tracesql::file::abandon_unfinished();
                    let line = b"\ninterrupted\n";
                    libc::write(2, line.as_ptr().cast(), line.len());
                    // No destructors or stdio flushing: another thread may hold their locks.
                    libc::_exit(130);
                }
            });
        if waiter.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
