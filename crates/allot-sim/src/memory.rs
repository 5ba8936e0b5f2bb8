//! Process-wide memory tuning for large simulations, and the process's own CPU time and peak
//! memory for the benchmarks' reports.
//!
//! A simulation of thousands of nodes touches gigabytes of fresh heap once and keeps it. With
//! transparent huge pages, the kernel zeroes a whole 2 MiB page on the first touch of any byte
//! in it; on the virtual machines allot is measured on that zeroing cost about 3 CPU-seconds of
//! kernel time per GiB (the 5,000-node benchmark spent a third of its time in `clear_page_erms`).
//! The allocator (mimalloc) asks for huge pages whenever the system allows them, so the binaries
//! that build big stores turn them off for their own process before the work starts.

/// Turns transparent huge pages off for this process (Linux `PR_SET_THP_DISABLE`; memory
/// mapped afterwards is backed by normal pages). Returns whether the process now runs without
/// them; a no-op returning `false` elsewhere or when the kernel refuses.
pub fn disable_transparent_huge_pages() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and only sets a flag on
        // this process's memory map; no pointers are passed.
        let set = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        // SAFETY: as above; PR_GET_THP_DISABLE returns the flag.
        set == 0 && unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) } == 1
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// User plus system CPU seconds of this process so far (Linux; `None` elsewhere). On a busy
/// machine CPU time says more than wall time.
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // The kernel reports clock ticks; USER_HZ is 100 on every Linux architecture we run on.
    Some((utime + stime) / 100.0)
}

/// The peak resident set size of this process so far, in MiB (Linux `VmHWM`; `None`
/// elsewhere).
pub fn peak_rss_mib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn the_flag_is_set_for_the_process() {
        // SAFETY: reads the process's THP flag.
        let flag = || unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert!(super::disable_transparent_huge_pages());
        assert_eq!(flag(), 1);
    }
}
