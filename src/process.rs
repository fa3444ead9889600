//! What the `dynalog` binary sets for the whole process, kept out of the engine
//! library: the C allocator's tuning ([`tune_allocator`]) and standard output while the
//! processes of a cluster connect ([`quiet_connect`]).

use dynalog_engines::diff::ConnectHook;
use std::sync::Arc;

/// The size from which the C allocator serves a request with its own memory map, set
/// by [`tune_allocator`].
pub const MMAP_THRESHOLD: usize = 256 * 1024;

/// Make freed large buffers go back to the operating system; call it once, first thing
/// in `main` (a program embedding the engines should do the same).
///
/// glibc's allocator serves requests of 128 KiB and more with a memory map of their own,
/// returned to the system when freed, but raises that threshold to the size of every
/// such block freed, up to 32 MiB: after a few rounds of the differential engine (whose
/// batches, consolidation tables and buffers are of that size, allocated and freed by
/// several threads) most large buffers come from the heaps and stay there when freed.
/// Fixing the threshold at [`MMAP_THRESHOLD`] keeps it where it is: measured with
/// `diff_bench` (2 workers), the peak RSS of transitive closure on 1,000 × 4,000 random
/// edges went from 364–370 to 298–300 MB and on RMAT-1k from 141–145 to 133–134 MB, in
/// the same time. Does nothing on other platforms or allocators; returns whether the
/// allocator took the setting.
pub fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a parameter of the allocator (thread-safe in glibc).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Standard output redirected to standard error, restored on drop.
struct StdoutToStderr {
    saved: libc::c_int,
}

impl StdoutToStderr {
    fn new() -> Option<StdoutToStderr> {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: dup/dup2 on the process's standard descriptors; failures are checked
        // and leave the descriptors as they were.
        unsafe {
            let saved = libc::dup(1);
            if saved < 0 {
                return None;
            }
            if libc::dup2(2, 1) < 0 {
                libc::close(saved);
                return None;
            }
            Some(StdoutToStderr { saved })
        }
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        // SAFETY: restores the descriptor saved in `new`.
        unsafe {
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
    }
}

/// The hook a cluster's engine calls around connecting to the other processes: timely
/// prints its connection progress ("awaiting connections ...") on standard output,
/// where a process writing its results to stdout cannot have it, so standard output
/// goes to standard error until every process is connected.
pub fn quiet_connect() -> ConnectHook {
    ConnectHook(Arc::new(|| Box::new(StdoutToStderr::new())))
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_allocator_takes_the_mmap_threshold() {
        assert!(super::tune_allocator());
    }
}
