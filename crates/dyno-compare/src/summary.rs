//! A comparison as text: what a session's events say while it runs, what `dyno compare
//! run` and `dyno compare report` print after judging, and a power study's tables and
//! recommendations (`dyno compare power`). The binary only picks the format and where
//! each line goes (a line on stderr, a note above the progress bar).

use crate::execution::Outcome;
use crate::judged::Judged;
use crate::precision::Look;
use crate::report;
use crate::session::Event;
use crate::trials::Study;
use dyno_report::{Table, TableFormat};
use std::path::Path;

/// `text` with a newline at its end (a rendered table may end without one).
fn line_ended(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

impl Event<'_> {
    /// What the event says, one line each, of the comparison file `file`: warnings, what
    /// is continued or started anew, an execution's warnings and failure, a precision
    /// look. None for the events that drive the progress bar (`Planned`, `Next`).
    pub fn lines(&self, file: &Path) -> Vec<String> {
        let file = file.display();
        match self {
            Event::BusyCpus(busy) => vec![format!(
                "warning: the CPUs are {:.0}% busy before the start: absolute numbers will be noisy; interleaving keeps the comparison fair, but expect wider intervals",
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
            Event::Looked(look) => look_lines(look),
            Event::Planned { .. } | Event::Next { .. } => Vec::new(),
        }
    }
}

/// A precision look: where it stands after its rounds, then each primary metric.
fn look_lines(look: &Look) -> Vec<String> {
    let left = match look.rounds_left {
        _ if look.stop.is_some() => String::new(),
        Some(r) => format!("; about {r} more rounds predicted"),
        None => "; the rounds still needed are not known yet".into(),
    };
    let judged = if look.metrics.is_empty() {
        ": no primary metric judged yet (two rounds are the least)"
    } else {
        ":"
    };
    let head = format!(
        "precision after {} round{} ({:.0} min){left}{judged}",
        look.rounds,
        if look.rounds == 1 { "" } else { "s" },
        look.elapsed_s / 60.0
    );
    std::iter::once(head)
        .chain(
            look.metrics
                .iter()
                .map(|m| format!("  {}", m.sentence(look.target))),
        )
        .collect()
}

impl Judged<'_> {
    /// The summary in `format` (terminal, Markdown or CSV): how many executions
    /// completed of those planned, the verdict table, each workload's per-stage block
    /// timings (not in CSV, which stays one table of verdicts), then one line per
    /// observation, precision, power and noise finding, unjudged kind, note and failed
    /// execution.
    pub fn summary(&self, format: TableFormat) -> String {
        let (meta, executions, j) = (
            self.measured.meta,
            self.measured.executions,
            &self.judgement,
        );
        let complete = executions
            .iter()
            .filter(|e| e.outcome == Outcome::Complete)
            .count();
        let mut out = format!(
            "{complete} complete executions of {} ({}{} planned)\n",
            executions.len(),
            if meta.sequential.is_some() {
                "at most "
            } else {
                ""
            },
            meta.rounds as usize * meta.subjects.len() * meta.workloads.len()
        );
        out += &line_ended(format.render(&report::verdict_table(meta, j)));
        if format != TableFormat::Csv {
            for stages in report::stage_tables(meta, executions, j) {
                out.push('\n');
                out += &line_ended(format.render(&stages));
            }
        }
        let mut lines: Vec<String> = report::observations(j)
            .into_iter()
            .map(|(v, text)| format!("{}: {text}", report::verdict_label(v)))
            .collect();
        lines.extend(j.precision.iter().map(|l| format!("precision: {l}")));
        lines.extend(report::power_lines(j).iter().map(|l| format!("power: {l}")));
        lines.extend(j.noise.lines().iter().map(|l| format!("noise: {l}")));
        lines.extend(
            crate::family::summary_lines(&j.unjudged)
                .iter()
                .map(|l| format!("note: {l}; --format json lists them")),
        );
        lines.extend(j.notes.iter().map(|n| format!("note: {n}")));
        let failures = report::failures(executions);
        if !failures.is_empty() {
            lines.push(format!("{} executions did not complete:", failures.len()));
            lines.extend(failures.iter().map(|f| format!("  {f}")));
        }
        for line in lines {
            out += &line;
            out.push('\n');
        }
        out
    }
}

impl Study {
    /// The study in `format` (terminal, Markdown or CSV): its tables, a blank line
    /// between them, then each candidate's window recommendation.
    pub fn text(&self, format: TableFormat) -> String {
        let tables: Vec<String> = self
            .tables()
            .iter()
            .map(|t: &Table| line_ended(format.render(t)))
            .collect();
        let mut out = tables.join("\n");
        for line in self.lines() {
            out += &line;
            out.push('\n');
        }
        out
    }
}
