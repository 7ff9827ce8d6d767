//! Progress on stderr: what runs now, how many of how many, time left. Quiet when
//! stderr is not a terminal, so pipes and CI logs get only the results.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A progress line for a known number of steps.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar of `total` steps; hidden when stderr is not a terminal.
    pub fn new(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar }
    }

    /// Announces the step that starts now and the time the remaining steps will take.
    pub fn step(&self, what: &str, remaining: Duration) {
        self.bar
            .set_message(format!("{what}  (about {} s left)", remaining.as_secs()));
    }

    /// Marks one step done.
    pub fn done_one(&self) {
        self.bar.inc(1);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
