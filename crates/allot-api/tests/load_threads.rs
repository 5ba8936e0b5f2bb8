//! Loading in pieces joins its worker threads before it returns: none is left tearing down
//! behind the caller (a leak checker run right after, as the `load` fuzz target's is, saw the
//! thread's last allocations as leaked when the threads were only waited for by their scope).
//! Its own test binary, so that no other test's loader threads are running at the same time.

use allot_api::load::{LoadOptions, load_bytes_in_pieces};

/// The kernel's flag on a task that has entered its exit (`PF_EXITING`, include/linux/sched.h).
const PF_EXITING: u64 = 0x4;

/// The threads of this process named `allot-load` that have not begun to exit (Linux names
/// them in /proc). A joined thread has begun: the kernel wakes the joiner from inside the
/// thread's exit, after it set `PF_EXITING`, and on a busy machine the task may still be
/// listed for a moment after that; a thread still running its own code (not joined) has not.
fn loader_threads() -> usize {
    let tasks = std::fs::read_dir("/proc/self/task").expect("/proc/self/task");
    tasks
        .filter_map(|task| {
            let path = task.ok()?.path();
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            let stat = std::fs::read_to_string(path.join("stat")).ok()?;
            // After the command name in parentheses: state, ppid, pgrp, session, tty_nr,
            // tpgid, flags.
            let flags: u64 = stat[stat.rfind(')')? + 2..]
                .split_whitespace()
                .nth(6)?
                .parse()
                .ok()?;
            Some(name.trim() == "allot-load" && flags & PF_EXITING == 0)
        })
        .filter(|&live| live)
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
