//! A progress bar for long runs, drawn on stderr when it is a terminal.

use std::io::IsTerminal;
use std::time::Instant;

use crate::run::Progress;

/// A progress bar on a terminal, shown once a run has taken more than a second.
pub struct ProgressDisplay {
    started: Instant,
    enabled: bool,
    bar: Option<indicatif::ProgressBar>,
}

impl ProgressDisplay {
    /// A display that draws only when stderr is a terminal.
    pub fn new() -> Self {
        ProgressDisplay {
            started: Instant::now(),
            enabled: std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// Shows how far the run has got (nothing during the first second).
    pub fn update(&mut self, progress: Progress) {
        if !self.enabled || self.started.elapsed().as_secs_f64() < 1.0 {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(progress.pods as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} pods bound {msg}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        bar.set_length(progress.pods as u64);
        bar.set_position(progress.bound_pods as u64);
        bar.set_message(format!(
            "({} reconciles, simulated {})",
            progress.reconciles, progress.now
        ));
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Default for ProgressDisplay {
    fn default() -> Self {
        Self::new()
    }
}
