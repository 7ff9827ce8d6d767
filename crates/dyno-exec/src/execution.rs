//! One execution: a subject under a workload in one round, what it recorded and how it
//! ended.

use crate::series::Series;
use serde::{Deserialize, Serialize};

/// How an execution ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Outcome {
    /// Ran through warm-up and the measured window and was stopped by dyno.
    Complete,
    /// Failed to start, crashed or stopped answering.
    Failed {
        /// What happened.
        reason: String,
        /// The node's last output lines.
        last_lines: Vec<String>,
    },
    /// Stopped by the user (Ctrl-C) before the window ended.
    Interrupted,
}

impl Outcome {
    /// A failure with no output lines to show.
    pub fn failed(reason: String) -> Outcome {
        Outcome::Failed {
            reason,
            last_lines: Vec::new(),
        }
    }
}

/// Everything one execution produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Subject name.
    pub subject: String,
    /// Workload name.
    pub workload: String,
    /// Zero-based round.
    pub round: u32,
    /// Start, seconds since the Unix epoch.
    pub started_at: f64,
    /// The exact command line run.
    pub command_line: Vec<String>,
    /// Series of the measured window.
    pub series: Vec<Series>,
    /// How it ended.
    pub outcome: Outcome,
    /// Things the reader should know (an unreachable metrics endpoint, a forced kill).
    pub warnings: Vec<String>,
}

impl Execution {
    /// An execution of `subject` under `workload` in `round` starting now, complete until
    /// something says otherwise.
    pub fn starting(subject: &str, workload: &str, round: u32, command_line: Vec<String>) -> Self {
        Execution {
            subject: subject.to_string(),
            workload: workload.to_string(),
            round,
            started_at: dyno_model::now_unix(),
            command_line,
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
        }
    }
}
