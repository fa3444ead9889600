//! Helpers of the hostile-input tests of every crate (included with `#[path]`, so that
//! one copy serves the workspace): the number of property-test cases and a thread with
//! the stack of a server thread.

#![allow(dead_code)]

/// `DYNALOG_FUZZ_CASES` if set (to run more cases by hand), else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("DYNALOG_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Run `f` on a thread with a 2 MB stack, the size of the server's threads (a panic is
/// re-raised; an overflow aborts the test process, which fails the run).
pub fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("a thread starts");
    match handle.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
