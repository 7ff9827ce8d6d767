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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeriesKind;

    #[test]
    fn outcomes_and_kinds_read_as_stored_comparisons_hold_them() {
        // dyno compare stores each execution's outcome and series kinds in its run's
        // settings: these spellings are in results stores already and must keep reading.
        let failed: Outcome = serde_json::from_str(
            r#"{"status":"failed","reason":"exited (1)","last_lines":["boom"]}"#,
        )
        .unwrap();
        assert_eq!(
            failed,
            Outcome::Failed {
                reason: "exited (1)".into(),
                last_lines: vec!["boom".into()]
            }
        );
        for (text, outcome) in [
            (r#"{"status":"complete"}"#, Outcome::Complete),
            (r#"{"status":"interrupted"}"#, Outcome::Interrupted),
        ] {
            assert_eq!(serde_json::to_string(&outcome).unwrap(), text);
            assert_eq!(serde_json::from_str::<Outcome>(text).unwrap(), outcome);
        }
        let kinds: Vec<SeriesKind> =
            serde_json::from_str(r#"["gauge","rate","peak","counter","observations"]"#).unwrap();
        assert_eq!(
            kinds,
            [
                SeriesKind::Gauge,
                SeriesKind::Rate,
                SeriesKind::Peak,
                SeriesKind::Counter,
                SeriesKind::Observations
            ]
        );
    }
}
