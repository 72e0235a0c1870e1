//! The memory policy of the commands that hold large row sets (export, convert, the shell's
//! `.export`): glibc's malloc keeps freed memory resident unless told otherwise. Applied by
//! those subcommands only, once, before their threads start; the library's export stage
//! returns free memory after it drops a large table.

/// Give the memory malloc holds free back to the system, after a large table is dropped:
/// glibc keeps freed memory in per-thread arenas, so a long export's resident size would
/// only grow.
pub fn return_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases memory malloc holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Serve allocations of 1 MiB and more (Arrow buffers, batches being built) with their own
/// memory mappings, returned to the system when freed. Left to itself, glibc raises that
/// threshold after the first such free, up to 32 MiB, and keeps later large buffers in its
/// heap, where freed memory stays resident: a 10 M-event Chrome export peaked ~100 MB
/// higher. Call before any threads start.
pub fn map_large_allocations() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes malloc's policy for later allocations.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}
