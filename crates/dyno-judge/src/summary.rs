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
    /// The summary in `format` (terminal, Markdown or CSV), answer first: the verdict
    /// on the primary metrics, how many executions completed of those planned, the
    /// primary verdicts' table, the secondary family in one line (`secondary`: its rows
    /// in the table too, and each workload's per-stage block timings), then one line per
    /// observation, precision, power and noise finding, unjudged kind, note and failed
    /// execution. CSV stays one table of every verdict, with no headline.
    pub fn summary(&self, format: TableFormat, secondary: bool) -> String {
        let (meta, executions, j) = (
            self.measured.meta,
            self.measured.executions,
            &self.judgement,
        );
        let csv = format == TableFormat::Csv;
        // With no metric judged apart, every row is primary and all of it is shown.
        let secondary = secondary || csv || j.verdicts.iter().all(|v| !v.secondary);
        let complete = executions
            .iter()
            .filter(|e| e.outcome == Outcome::Complete)
            .count();
        let mut out = String::new();
        if !csv {
            out += &report::headline(j);
            out.push('\n');
        }
        out += &format!(
            "{complete} complete executions of {} ({}{} planned)\n",
            executions.len(),
            if meta.sequential.is_some() {
                "at most "
            } else {
                ""
            },
            meta.rounds as usize * meta.subjects.len() * meta.workloads.len()
        );
        let table = if secondary {
            report::verdict_table(meta, j)
        } else {
            report::primary_table(meta, j)
        };
        out += &line_ended(format.render(&table));
        if !csv {
            if let Some(line) = report::secondary_line(j, secondary) {
                out += &line;
                out.push('\n');
            }
        }
        if !csv && secondary {
            for stages in report::stage_tables(meta, executions, j) {
                out.push('\n');
                out += &line_ended(format.render(&stages));
            }
        }
        for line in self.lines(secondary) {
            out += &line;
            out.push('\n');
        }
        out
    }

    /// The lines under the tables: observations (the secondary family's only when
    /// `secondary`), precision, power, noise, disturbance, unjudged kinds, notes and
    /// failed executions.
    fn lines(&self, secondary: bool) -> Vec<String> {
        let (executions, j) = (self.measured.executions, &self.judgement);
        let mut lines: Vec<String> = report::observations_of(j, secondary)
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
        lines
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::ComparisonMeta;
    use crate::judged::Measured;
    use crate::synthetic::Synthetic;
    use crate::verdict::tests::{run, workloads};
    use crate::verdict::{judge_with, JudgeOptions};
    use dyno_model::Host;

    /// A comparison of `b` 10% hungrier for CPU than `a`, `cpu_percent` its one primary
    /// metric (every other metric secondary), printed with and without `--secondary`.
    fn printed(secondary: bool) -> (String, crate::verdict::Judgement) {
        let mut ex = Synthetic::new(3);
        ex.slowdown.insert("b".into(), 1.10);
        let execs = run(8, &ex);
        let options = JudgeOptions {
            primary: vec!["cpu_percent".into()],
            ..JudgeOptions::default()
        };
        let subjects = vec!["a".to_string(), "b".to_string()];
        let settings = dyno_stats::ComparisonSettings::default();
        let judgement = judge_with(&execs, &subjects, &settings, &options);
        let workloads = workloads();
        let meta = ComparisonMeta::of(&["a", "b"], &workloads, 8);
        let judged = Judged {
            measured: Measured {
                meta: &meta,
                workloads: &workloads,
                host: &Host::default(),
                executions: &execs,
                elapsed_s: 0.0,
            },
            judgement: judgement.clone(),
            parameters: vec![],
        };
        (
            judged.summary(TableFormat::Terminal { color: false }, secondary),
            judgement,
        )
    }

    /// Whether `line` is a row of the verdict table naming `metric`.
    fn row_of(line: &str, metric: &str) -> bool {
        line.starts_with('│') && line.split_whitespace().nth(3) == Some(metric)
    }

    #[test]
    fn the_report_answers_first_and_sums_the_secondary_metrics_up_in_a_line() {
        let (text, j) = printed(false);
        let secondary: Vec<&str> = j
            .verdicts
            .iter()
            .filter(|v| v.secondary)
            .map(|v| v.metric.name.as_str())
            .collect();
        assert!(secondary.len() > 5, "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("verdict: regression: ")
                && lines[0].contains("cpu_percent of b +"),
            "{text}"
        );
        // No secondary metric has a row; one line counts them and says how to list them.
        for name in &secondary {
            assert!(
                !lines.iter().any(|l| row_of(l, name)),
                "{name} listed:\n{text}"
            );
        }
        let line = lines
            .iter()
            .find(|l| l.starts_with("secondary: "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains(&format!(
                "{} rows judged apart from the verdict",
                secondary.len()
            )) && line.ends_with("; --secondary lists them"),
            "{line}"
        );
        // The primary row comes before the 10th line, whatever the secondary family holds.
        let row = lines.iter().position(|l| row_of(l, "cpu_percent")).unwrap();
        assert!(row < 10, "{text}");

        let (all, _) = printed(true);
        for name in &secondary {
            assert!(
                all.lines().any(|l| row_of(l, name)),
                "{name} not listed with --secondary:\n{all}"
            );
        }
        assert!(!all.contains("--secondary lists them"), "{all}");
    }
}
