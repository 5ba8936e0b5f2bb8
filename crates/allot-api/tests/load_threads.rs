//! Loading in pieces joins its worker threads before it returns: none is left tearing down
//! behind the caller (a leak checker run right after, as the `load` fuzz target's is, saw the
//! thread's last allocations as leaked when the threads were only waited for by their scope).
//! Its own test binary, so that no other test's loader threads are running at the same time.

use allot_api::load::{LoadOptions, load_bytes_in_pieces};

/// The threads of this process named `allot-load` (Linux names them in /proc).
fn loader_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "allot-load")
        .count()
}

#[test]
fn no_loader_thread_outlives_the_load() {
    let text = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n".repeat(20);
    for round in 0..300 {
        let loaded = load_bytes_in_pieces(
            "threads.yaml",
            text.clone().into_bytes(),
            &LoadOptions::default(),
            3,
            40,
        );
        assert_eq!(loaded.documents.len(), 20);
        assert_eq!(
            loader_threads(),
            0,
            "round {round}: a loader thread is still alive"
        );
    }
}
