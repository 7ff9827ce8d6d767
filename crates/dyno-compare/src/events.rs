//! A session's events as text: what `dyno compare run` says while it runs. The binary
//! only picks where each line goes (a line on stderr, a note above the progress bar).

use crate::session::Event;
use dyno_judge::report;
use std::path::Path;

impl Event<'_> {
    /// What the event says, one line each, of the comparison file `file`: warnings, what
    /// is continued or started anew, an execution's warnings and failure, a precision
    /// look. None for the events that drive the progress bar (`Planned`, `Next`).
    pub fn lines(&self, file: &Path) -> Vec<String> {
        let file = file.display();
        match self {
            Event::BusyCpus(busy) => vec![format!(
                "warning: the CPUs are {:.0}% busy before the start: absolute numbers will be noisy; each round pairs the subjects, which keeps the comparison fair, but expect wider intervals",
                busy * 100.0
            )],
            Event::Continuing { id, done, planned } => vec![format!(
                "continuing comparison {id} of {file}: {done} of {planned} executions already stored (--fresh starts anew)"
            )],
            Event::Changed { id, done, planned } => vec![format!(
                "{file} changed since comparison {id} was interrupted ({done} of {planned} executions): starting a new comparison"
            )],
            Event::Executed(exec) => exec
                .warnings
                .iter()
                .map(|w| format!("warning: {} / {}: {w}", exec.subject, exec.workload))
                .chain(report::failures(std::slice::from_ref(*exec)))
                .collect(),
            Event::AlreadyDecided { id, why } => vec![format!(
                "comparison {id} of {file} already stopped ({why}): starting a new comparison (a tighter precision or a larger budget continues it instead)"
            )],
            Event::BusyBeforeRound { round, busy } => vec![format!(
                "warning: before round {}: the machine is {}: its work lands in this round's numbers",
                round + 1,
                busy.sentence()
            )],
            Event::Looked(look) => look.lines(),
            Event::Planned { .. } | Event::Next { .. } => Vec::new(),
        }
    }
}
