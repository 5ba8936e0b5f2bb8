//! What a long run shows on stderr: each phase (load, validate, run, write) as it happens, then
//! a one-line summary.
//!
//! On a terminal, a spinner names the phase and counts the seconds from its start (loading
//! 60,000 documents is one long call with nothing to count), the run phase is a bar of pods
//! running with the pods bound, the reconciles and the simulated time beside it, and the
//! summary line stays when the bars are gone. On anything else (a file, a pipe, CI logs)
//! nothing is written unless asked (`report`): then one line per finished phase and the summary.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use crate::run::Progress;

/// The phases of `allot simulate`, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Reading and parsing the files.
    Load,
    /// Defaulting and validating the objects, building the input.
    Validate,
    /// The controllers on the simulated clock.
    Run,
    /// Writing the output (and metadata files).
    Write,
}

impl Phase {
    /// The phase's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Validate => "validate",
            Phase::Run => "run",
            Phase::Write => "write",
        }
    }
}

/// The display of a run's phases on stderr.
pub struct ProgressDisplay {
    terminal: bool,
    report: bool,
    started: Instant,
    current: Option<(Phase, Instant, indicatif::ProgressBar)>,
    done: Vec<(Phase, Duration)>,
}

impl ProgressDisplay {
    /// A display that draws when stderr is a terminal, and writes phase lines and the summary
    /// elsewhere only when `report` is set.
    pub fn new(report: bool) -> Self {
        Self::with_terminal(std::io::stderr().is_terminal(), report)
    }

    /// A display that draws live when `terminal` (tests choose).
    pub fn with_terminal(terminal: bool, report: bool) -> Self {
        ProgressDisplay {
            terminal,
            report,
            started: Instant::now(),
            current: None,
            done: Vec::new(),
        }
    }

    /// Whether the summary line is written (on a terminal, or when asked).
    pub fn shows_summary(&self) -> bool {
        self.terminal || self.report
    }

    /// Ends the current phase and starts `phase`, with `what` beside its spinner.
    pub fn start(&mut self, phase: Phase, what: &str) {
        self.end();
        let bar = if self.terminal {
            let bar = indicatif::ProgressBar::new_spinner();
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{spinner} {prefix} [{elapsed}] {msg}")
            {
                bar.set_style(style);
            }
            bar.set_prefix(phase.name());
            bar.set_message(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        } else {
            indicatif::ProgressBar::hidden()
        };
        self.current = Some((phase, Instant::now(), bar));
    }

    /// Shows how far the run has got: pods running of all pods, with the pods bound, the
    /// reconciles and the simulated time.
    pub fn update(&mut self, progress: Progress) {
        let Some((Phase::Run, _, bar)) = &mut self.current else {
            return;
        };
        if !self.terminal {
            return;
        }
        if bar.length().is_none()
            && let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} {prefix} [{elapsed}] {bar:30} {pos}/{len} pods running, {msg}",
            )
        {
            bar.set_style(style);
        }
        bar.set_length(progress.pods as u64);
        bar.set_position(progress.running_pods as u64);
        bar.set_message(format!(
            "{} bound, {} reconciles, simulated {}",
            progress.bound_pods,
            progress.reconciles,
            crate::table::duration(progress.now.seconds())
        ));
    }

    /// Ends the current phase (its line, when asked, off a terminal).
    pub fn end(&mut self) {
        if let Some((phase, started, bar)) = self.current.take() {
            bar.finish_and_clear();
            let took = started.elapsed();
            if self.report && !self.terminal {
                eprint_line(&format!("{}: {}", phase.name(), seconds(took)));
            }
            self.done.push((phase, took));
        }
    }

    /// How long each finished phase took, in order.
    pub fn phases(&self) -> &[(Phase, Duration)] {
        &self.done
    }

    /// The wall time since the display was made.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends the current phase and writes the summary line (on a terminal, or when asked):
    /// `what`, then the wall time with each phase's share, then the peak memory.
    pub fn finish(&mut self, what: &str) {
        self.end();
        if !self.shows_summary() {
            return;
        }
        eprint_line(&self.summary(what));
    }

    /// The summary line [`finish`](Self::finish) writes.
    pub fn summary(&self, what: &str) -> String {
        let phases: Vec<String> = self
            .done
            .iter()
            .map(|(phase, took)| format!("{} {}", phase.name(), seconds(*took)))
            .collect();
        let mut line = format!("{what}; wall {}", seconds(self.elapsed()));
        if !phases.is_empty() {
            line.push_str(&format!(" ({})", phases.join(", ")));
        }
        if let Some(peak) = peak_memory_bytes() {
            line.push_str(&format!("; peak memory {}", bytes(peak)));
        }
        line
    }
}

impl Drop for ProgressDisplay {
    fn drop(&mut self) {
        if let Some((_, _, bar)) = self.current.take() {
            bar.finish_and_clear();
        }
    }
}

fn eprint_line(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// A duration as `0.42 s`, `11.0 s`, `95 s`.
pub fn seconds(took: Duration) -> String {
    let s = took.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else if s < 100.0 {
        format!("{s:.1} s")
    } else {
        format!("{s:.0} s")
    }
}

/// Bytes as `45 MB`, `1.9 GB` (powers of 1000, as `ps` and `time` users read them).
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.1} GB", n / 1e9)
    } else {
        format!("{:.0} MB", n / 1e6)
    }
}

/// The process's peak resident memory so far (`getrusage`'s `ru_maxrss`), when the system
/// reports it.
pub fn peak_memory_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given, which points to
    // storage of that type; the value is read only when the call succeeded.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    // Linux reports kilobytes.
    u64::try_from(usage.ru_maxrss).ok().map(|kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_every_phase_and_the_peak_memory() {
        let mut display = ProgressDisplay::with_terminal(false, false);
        for phase in [Phase::Load, Phase::Validate, Phase::Run, Phase::Write] {
            display.start(phase, "");
        }
        display.end();
        let line = display.summary("8 pods: 7 placed, 1 pending");
        for part in [
            "8 pods: 7 placed, 1 pending; wall ",
            "(load ",
            ", validate ",
            ", run ",
            ", write ",
            "; peak memory ",
        ] {
            assert!(line.contains(part), "{part:?} in {line}");
        }
        assert!(peak_memory_bytes().is_some_and(|b| b > 1_000_000));
        assert!(!display.shows_summary());
        assert!(ProgressDisplay::with_terminal(false, true).shows_summary());
    }

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(bytes(45_000_000), "45 MB");
        assert_eq!(bytes(1_900_000_000), "1.9 GB");
        assert_eq!(seconds(Duration::from_millis(420)), "0.42 s");
        assert_eq!(seconds(Duration::from_millis(11_040)), "11.0 s");
    }
}
