//! A comparison as text: what `dyno compare run` and `dyno compare report` print after
//! judging, and a power study's tables and recommendations (`dyno compare power`). The
//! binary only picks the format.

use crate::judged::Judged;
use crate::report;
use crate::trials::Study;
use dyno_exec::Outcome;
use dyno_report::{Table, TableFormat};

/// `text` with a newline at its end (a rendered table may end without one).
fn line_ended(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
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
        lines.extend(report::disturbance_line(executions).map(|l| format!("disturbance: {l}")));
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
