//! A run handed from one dyno process to another: what `dyno cluster run --compared FILE`
//! writes for the `dyno compare` that started it (schema `dyno.cluster.compared/1`).
//!
//! A cluster execution runs in a child process of its own, so that a cluster's hundreds
//! of threads and processes, and anything that goes wrong in them, stay apart from the
//! comparison; this is the one type the two exchange. The writer fills it from its own
//! analysis (dyno-cluster's `compared::of`); the reader checks the schema
//! ([`ComparedRun::parse`]) and records it into its execution ([`ComparedRun::record`]).

use crate::execution::{Execution, Outcome};
use crate::series::Series;
use serde::{Deserialize, Serialize};

/// The JSON schema of a [`ComparedRun`].
pub const COMPARED_SCHEMA: &str = "dyno.cluster.compared/1";

/// One run as a comparison's execution: its compared metrics as series, and whether it
/// completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedRun {
    /// Always [`COMPARED_SCHEMA`].
    pub schema: String,
    /// The node command the run ran (`DYNO node run` for the reference node).
    pub node_command: Vec<String>,
    /// False when a node or the load exited early or the run was interrupted.
    pub complete: bool,
    /// What went wrong, one line each.
    pub problems: Vec<String>,
    /// Warnings from the run, and one when it measured nothing worth comparing.
    pub warnings: Vec<String>,
    /// The compared metrics (none for an incomplete run).
    pub series: Vec<Series>,
}

/// Why a compared run cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ComparedError {
    /// Not JSON of a compared run.
    #[error("not a compared run: {0}")]
    Json(#[from] serde_json::Error),
    /// A compared run of another schema (another version of dyno wrote it).
    #[error("schema `{found}`, expected `{COMPARED_SCHEMA}`")]
    Schema {
        /// The schema the text names.
        found: String,
    },
}

impl ComparedRun {
    /// A complete run of `node_command` with nothing measured yet.
    pub fn new(node_command: Vec<String>) -> ComparedRun {
        ComparedRun {
            schema: COMPARED_SCHEMA.to_string(),
            node_command,
            complete: true,
            problems: Vec::new(),
            warnings: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Reads a compared run written by [`ComparedRun::to_json`], refusing another schema.
    pub fn parse(text: &str) -> Result<ComparedRun, ComparedError> {
        let run: ComparedRun = serde_json::from_str(text)?;
        if run.schema != COMPARED_SCHEMA {
            return Err(ComparedError::Schema { found: run.schema });
        }
        Ok(run)
    }

    /// The run as one line of JSON.
    pub fn to_json(&self) -> String {
        // Plain data with string keys: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Records the run into `exec`: the node command after what `exec` ran, the warnings,
    /// and either the series (a complete run) or how it ended: interrupted when `stopped`
    /// (the user stopped the comparison), else failed with the run's problems.
    pub fn record(self, exec: &mut Execution, stopped: bool) {
        exec.command_line.extend(self.node_command);
        exec.warnings.extend(self.warnings);
        if self.complete {
            exec.series = self.series;
        } else if stopped {
            exec.outcome = Outcome::Interrupted;
        } else {
            exec.outcome = Outcome::failed(self.problems.join("; "));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeriesKind;
    use dyno_model::{Direction, Metric, Unit};

    fn run() -> ComparedRun {
        ComparedRun {
            warnings: vec!["one node was slow to start".into()],
            series: vec![Series {
                metric: Metric::new(
                    "cluster:adoption_0.50_s",
                    Unit::Seconds,
                    Direction::LowerIsBetter,
                ),
                kind: SeriesKind::Observations,
                points: vec![(0.0, 0.25), (1.0, 0.5)],
            }],
            ..ComparedRun::new(vec!["dyno".into(), "node".into(), "run".into()])
        }
    }

    #[test]
    fn the_json_is_the_schema_stored_comparisons_were_made_with() {
        // Field names and kind spellings as dyno.cluster.compared/1 was first written:
        // a child of an older dyno must still be read.
        let written = r#"{"schema":"dyno.cluster.compared/1","node_command":["dyno","node","run"],"complete":true,"problems":[],"warnings":["one node was slow to start"],"series":[{"metric":{"name":"cluster:adoption_0.50_s","unit":"seconds","direction":"lower_is_better"},"kind":"observations","points":[[0.0,0.25],[1.0,0.5]]}]}"#;
        assert_eq!(run().to_json(), written);
        assert_eq!(ComparedRun::parse(written).unwrap(), run());
    }

    #[test]
    fn another_schema_or_no_json_is_refused() {
        let other = run().to_json().replace("compared/1", "compared/2");
        let err = ComparedRun::parse(&other).unwrap_err();
        assert!(
            matches!(&err, ComparedError::Schema { found } if found == "dyno.cluster.compared/2"),
            "{err}"
        );
        assert!(matches!(
            ComparedRun::parse("{\"schema\":"),
            Err(ComparedError::Json(_))
        ));
    }

    #[test]
    fn a_complete_run_gives_its_series_and_an_incomplete_one_its_ending() {
        let mut exec = Execution::starting("v1", "value", 0, vec!["cluster".into()]);
        run().record(&mut exec, false);
        assert_eq!(exec.command_line, ["cluster", "dyno", "node", "run"]);
        assert_eq!(exec.outcome, Outcome::Complete);
        assert_eq!(exec.series.len(), 1);
        assert_eq!(exec.warnings, ["one node was slow to start"]);

        let broken = ComparedRun {
            complete: false,
            problems: vec!["n1 exited (1)".into(), "load exited".into()],
            ..run()
        };
        let mut failed = Execution::starting("v1", "value", 0, Vec::new());
        broken.clone().record(&mut failed, false);
        assert_eq!(
            failed.outcome,
            Outcome::failed("n1 exited (1); load exited".into())
        );
        assert!(
            failed.series.is_empty(),
            "an incomplete run's series are not kept"
        );
        let mut stopped = Execution::starting("v1", "value", 0, Vec::new());
        broken.record(&mut stopped, true);
        assert_eq!(stopped.outcome, Outcome::Interrupted);
    }
}
