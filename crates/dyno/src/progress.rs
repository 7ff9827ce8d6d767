//! Progress on stderr: what runs now, how many of how many, time left. On a terminal a
//! live line; otherwise (a CI log, `nohup`, a pipe) one plain line per step, so a job of
//! many minutes is never silent, and nothing that redraws.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// A progress line for a known number of steps.
pub struct Progress {
    bar: ProgressBar,
    /// Stderr is not a terminal: each step is logged as a line instead.
    lines: bool,
}

impl Progress {
    /// A bar of `total` steps; hidden when stderr is not a terminal.
    pub fn new(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let lines = !std::io::stderr().is_terminal();
        if lines {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar, lines }
    }

    /// Announces the step that starts now and the time the remaining steps will take.
    pub fn step(&self, what: &str, remaining: Duration) {
        let message = format!("{what}  (about {} s left)", remaining.as_secs());
        if self.lines {
            let total = self.bar.length().unwrap_or(0);
            errln!("[{}/{total}] {message}", self.bar.position());
        }
        self.bar.set_message(message);
    }

    /// Prints a line on stderr above the bar (or among the step lines).
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| errln!("{line}"));
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
