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
    /// Ran through its window while other work on the machine used more CPU than the
    /// comparison allows (`max_disturbance`): kept, but left out of the judgement and run
    /// again in its place.
    Disturbed {
        /// How much the rest of the machine used, and who was busiest.
        reason: String,
    },
}

impl Outcome {
    /// A failure with no output lines to show.
    pub fn failed(reason: String) -> Outcome {
        Outcome::Failed {
            reason,
            last_lines: Vec::new(),
        }
    }

    /// Whether the execution stands for its slot: it completed or failed. An interrupted
    /// or disturbed one is run again in its place.
    pub fn counts(&self) -> bool {
        matches!(self, Outcome::Complete | Outcome::Failed { .. })
    }
}

/// Where and how an execution's node was started among the others of its start: what
/// the noise report reads to say how much CPU placement and start order explain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Its position in the order the start's nodes were spawned (0: first). Always 0 when
    /// subjects run one at a time.
    #[serde(default)]
    pub spawned: u32,
    /// The CPUs its node ran on (`None`: wherever the scheduler put it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
}

/// What the rest of the machine did during an execution's window: CPU the host used
/// besides the measured nodes, their loads and dyno itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// That CPU time over the window, in percent of one core (what the series
    /// `host:other_cpu_percent` holds).
    pub other_cpu_percent: f64,
    /// The busiest other process: its name, pid and percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest: Option<(String, u32, f64)>,
}

/// The metric of an execution's [`Disturbance`]: what the rest of the machine used.
pub const OTHER_CPU_METRIC: &str = "host:other_cpu_percent";

impl Disturbance {
    /// The disturbance as a series of one point, [`OTHER_CPU_METRIC`]: stored and shown
    /// with the execution's other metrics.
    pub fn series(&self) -> crate::Series {
        crate::Series {
            metric: dyno_model::Metric::new(
                OTHER_CPU_METRIC,
                dyno_model::Unit::Percent,
                dyno_model::Direction::LowerIsBetter,
            ),
            kind: crate::SeriesKind::Gauge,
            points: vec![(0.0, self.other_cpu_percent)],
        }
    }

    /// "45.2% of a core (busiest: rustc, pid 4242, 38.0%)".
    pub fn sentence(&self) -> String {
        let who = match &self.busiest {
            Some((name, pid, pct)) => format!(" (busiest: {name}, pid {pid}, {pct:.1}%)"),
            None => String::new(),
        };
        format!("{:.1}% of a core{who}", self.other_cpu_percent)
    }
}

/// Everything one execution produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Subject name.
    pub subject: String,
    /// Workload name.
    pub workload: String,
    /// Zero-based round: one start of its node (of every subject's, side by side).
    pub round: u32,
    /// Which of its start's consecutive measured windows (zero-based; 0 when a start has
    /// one): the windows of one round share a start, so the judge takes the round as the
    /// unit.
    pub window: u32,
    /// Where and in which order its node was started.
    pub placement: Placement,
    /// When its measured window opened and closed, seconds since the Unix epoch (`None`:
    /// it never opened). Side by side, the same for every subject of the start.
    pub window_at: Option<(f64, f64)>,
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
    /// What the rest of the machine used during the window (`None`: not measured, as for
    /// a cluster or a synthetic node).
    pub disturbance: Option<Disturbance>,
}

impl Execution {
    /// An execution of `subject` under `workload` in `round` starting now, complete until
    /// something says otherwise.
    pub fn starting(subject: &str, workload: &str, round: u32, command_line: Vec<String>) -> Self {
        Execution {
            subject: subject.to_string(),
            workload: workload.to_string(),
            round,
            window: 0,
            placement: Placement::default(),
            window_at: None,
            started_at: dyno_model::now_unix(),
            command_line,
            series: Vec::new(),
            outcome: Outcome::Complete,
            warnings: Vec::new(),
            disturbance: None,
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
            (
                r#"{"status":"disturbed","reason":"other work: 45% of a core"}"#,
                Outcome::Disturbed {
                    reason: "other work: 45% of a core".into(),
                },
            ),
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
