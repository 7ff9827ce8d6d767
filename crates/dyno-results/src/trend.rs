//! The answer to `dyno results trend`, as a typed, schema-versioned report: a metric's
//! stored history ([`dyno_store::Store::metric_history`], one median per complete run), its
//! change points ([`dyno_stats::change_points`], E-Divisive means with a t-test) and the
//! verdict on the newest run. Method and exit code: docs/trend.md.
//!
//! As in [`crate::FleetReport`], fields are declared in the JSON document's (alphabetical)
//! order, so the bytes of `dyno.results.trend/1` do not change.

use crate::fleet::{better, MetricRef};
use crate::ResultsError;
use dyno_model::{format_timestamp, format_value, Metric};
use dyno_report::plot::{ChangeKind, TrendPlot};
use dyno_report::{Align, Cell, HtmlReport, Section, Table, TableFormat, Verdict};
use dyno_stats::{change_points, latest_regression, ChangePoint, ChangePointSettings, Strength};
use dyno_store::{HistoryPoint, RunId};
use serde::Serialize;

/// The JSON document's `schema` (docs/output.md).
pub const TREND_SCHEMA: &str = "dyno.results.trend/1";

/// The fewest runs a history needs: with fewer, no split leaves enough values on both
/// sides to test.
pub const MIN_POINTS: usize = 8;

/// The filters that selected the history, as given.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TrendFilters {
    /// Only runs of this command.
    pub command: Option<String>,
    /// Only runs whose host name contains this text.
    pub host: Option<String>,
    /// Only the newest N runs.
    pub last: Option<u64>,
    /// Only runs started on or after this time (RFC 3339).
    pub since: Option<String>,
    /// Only runs whose subject name contains this text.
    pub subject: Option<String>,
    /// Only runs whose settings name this workload.
    pub workload: Option<String>,
}

/// How change points were searched for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendSettings {
    /// `e-divisive-means+t-test`.
    pub method: &'static str,
    /// Fewest runs on either side of a change point.
    pub min_segment: usize,
    /// p-value at most which a change point is strong.
    pub p_strong: f64,
    /// p-value at most which a change point is weak.
    pub p_weak: f64,
    /// A strong regression within the newest this many runs fails the verdict.
    pub recent: usize,
    /// Runs per search window.
    pub window: usize,
}

/// One run of the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendPoint {
    /// The command that made the run.
    pub command: String,
    /// Host name it ran on.
    pub hostname: String,
    /// The run (id in this store).
    pub run: RunId,
    /// The run's globally unique id.
    pub run_uuid: String,
    /// How many samples the median is of.
    pub samples: usize,
    /// Start (RFC 3339, UTC).
    pub started_at: String,
    /// The subject's name.
    pub subject: String,
    /// The median of the run's samples.
    pub value: f64,
    /// The workload named in the run's settings.
    pub workload: Option<String>,
}

/// One change point, with the run it starts at.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendChange {
    /// `regression` or `improvement`, in the metric's direction.
    pub effect: &'static str,
    /// Index of the first run after the change.
    pub index: usize,
    /// Mean after the change.
    pub mean_after: f64,
    /// Mean before the change.
    pub mean_before: f64,
    /// The t-test's p-value.
    pub p_value: f64,
    /// Relative change of the mean; `None` when not finite.
    pub relative_change: Option<f64>,
    /// The run it starts at.
    pub run: RunId,
    /// That run's globally unique id.
    pub run_uuid: String,
    /// That run's start (RFC 3339, UTC).
    pub started_at: String,
    /// `strong` or `weak`.
    pub strength: &'static str,
    /// The `dyno compare bisect` command that searches the commits between the run before
    /// the change and the run it starts at, when both measured a git subject of the same
    /// comparison file at different commits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bisect: Option<String>,
}

/// The verdict on the newest run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendVerdict {
    /// Index of the change point that makes the newest run a regression.
    pub change_point: Option<usize>,
    /// One line that says why.
    pub message: String,
    /// Whether the newest run starts a regression.
    pub regression: bool,
}

/// `dyno results trend`'s report (`dyno.results.trend/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendReport {
    /// The change points, oldest first.
    pub change_points: Vec<TrendChange>,
    /// The filters that selected the history.
    pub filters: TrendFilters,
    /// The metric.
    pub metric: MetricRef,
    /// The history, oldest first.
    pub points: Vec<TrendPoint>,
    /// [`TREND_SCHEMA`].
    pub schema: &'static str,
    /// How change points were searched for.
    pub settings: TrendSettings,
    /// The verdict on the newest run.
    pub verdict: TrendVerdict,
    /// The history as the store gave it (for tables and plots).
    #[serde(skip)]
    pub history: Vec<HistoryPoint>,
    /// The change points as dyno-stats found them.
    #[serde(skip)]
    pub changes: Vec<ChangePoint>,
    /// The metric with its unit and direction.
    #[serde(skip)]
    pub measured: Metric,
}

impl TrendReport {
    /// Finds the change points of `history` (non-empty, oldest first) and judges its
    /// newest run: a regression when the latest strong change point is one and starts
    /// within the newest `recent` runs. Fails only on an infinite value.
    pub fn analyse(
        history: Vec<HistoryPoint>,
        settings: ChangePointSettings,
        recent: usize,
        filters: TrendFilters,
    ) -> Result<TrendReport, ResultsError> {
        let measured = history[0].metric.clone();
        let values: Vec<f64> = history.iter().map(|p| p.value).collect();
        let changes = change_points(&values, &settings)?;
        let better = better(measured.direction);
        let regression = latest_regression(&changes, values.len(), better, recent)
            .and_then(|r| changes.iter().position(|c| c.index == r.index));
        let message = verdict_line(&measured, &history, &changes, regression, recent);
        let effect = |c: &ChangePoint| effect(c, &measured);
        Ok(TrendReport {
            change_points: changes
                .iter()
                .map(|c| change(c, &history, effect(c)))
                .collect(),
            filters,
            metric: MetricRef::from(&measured),
            points: history.iter().map(point).collect(),
            schema: TREND_SCHEMA,
            settings: TrendSettings {
                method: "e-divisive-means+t-test",
                min_segment: settings.min_segment,
                p_strong: settings.p_strong,
                p_weak: settings.p_weak,
                recent,
                window: settings.window,
            },
            verdict: TrendVerdict {
                change_point: regression.map(|i| changes[i].index),
                message,
                regression: regression.is_some(),
            },
            history,
            changes,
            measured,
        })
    }

    /// Whether change point `c` made the metric worse, in its direction.
    pub fn is_regression(&self, c: &ChangePoint) -> bool {
        c.is_regression(better(self.measured.direction))
    }

    /// "regression" or "improvement": what the change did, in the metric's direction.
    pub fn effect(&self, c: &ChangePoint) -> &'static str {
        effect(c, &self.measured)
    }
}

impl TrendReport {
    /// The change points as a table (run, start, subject, means before and after, change,
    /// p-value, strength and effect, coloured by what the change did).
    pub fn table(&self) -> Table {
        let value = |v: f64| format_value(v, self.measured.unit);
        let mut table = Table::new(format!(
            "change points of {} over {} runs",
            self.measured.name,
            self.history.len()
        ))
        .column("Run", Align::Right)
        .column("Started (UTC)", Align::Left)
        .column("Subject", Align::Left)
        .column("Before", Align::Right)
        .column("After", Align::Right)
        .column("Change", Align::Right)
        .column("p", Align::Right)
        .column("Strength", Align::Left)
        .column("Effect", Align::Left);
        for c in &self.changes {
            let run = &self.history[c.index];
            let effect = Cell::new(self.effect(c));
            let effect = match ChangeKind::of(c, better(self.measured.direction)) {
                ChangeKind::Weak => effect,
                ChangeKind::Regression => effect.bad(),
                ChangeKind::Improvement => effect.good(),
            };
            table.push_row([
                Cell::new(run.run.to_string()),
                Cell::new(format_timestamp(run.started_at)),
                Cell::new(run.subject.name.clone()),
                Cell::new(value(c.mean_before)),
                Cell::new(value(c.mean_after)),
                Cell::new(percent(c.relative_change)),
                Cell::new(dyno_report::format_p_value(c.p_value)),
                Cell::new(c.strength.as_str()),
                effect,
            ]);
        }
        table
    }

    /// The report as `dyno results trend` prints it in `format` (terminal or Markdown):
    /// the change points' table when there are any, then the verdict's line.
    pub fn text(&self, format: TableFormat) -> String {
        let shown = if self.changes.is_empty() {
            String::new()
        } else {
            format.render(&self.table()) + "\n"
        };
        let bisect: String = self
            .change_points
            .iter()
            .filter_map(|c| {
                let command = c.bisect.as_ref()?;
                Some(format!(
                    "bisect: the commits between run {} and run {}: {command}\n",
                    self.history[c.index - 1].run,
                    c.run
                ))
            })
            .collect();
        format!("{shown}{}\n{bisect}", self.verdict.message)
    }

    /// A self-contained HTML report: the verdict, the per-run medians plotted with their
    /// change points, the table, and the settings; `filters` as
    /// [`crate::TrendQuery::described_filters`] gives them.
    pub fn html(&self, filters: &str) -> String {
        let metric = &self.measured;
        let values: Vec<f64> = self.history.iter().map(|p| p.value).collect();
        let mut plot = TrendPlot::new(
            format!("{} over {} runs", metric.name, self.history.len()),
            metric.clone(),
            values,
        );
        for c in &self.changes {
            let label = format!(
                "run {} {}",
                self.history[c.index].run,
                percent(c.relative_change)
            );
            plot = plot.mark(c.index, ChangeKind::of(c, better(metric.direction)), label);
        }
        let badge = if self.verdict.regression {
            Verdict::Regression
        } else {
            Verdict::NoChange
        };
        let section = Section::new(metric.name.clone())
            .verdict(badge, self.verdict.message.clone())
            .plot_result(
                "per-run medians with change points (strong: coloured, weak: grey)",
                plot.render_svg(),
            )
            .table(self.table());
        let mut report = HtmlReport::new(format!("dyno results trend: {}", metric.name))
            .parameter(
                "metric",
                format!(
                    "{} ({}, {})",
                    metric.name,
                    metric.unit.symbol(),
                    metric.direction.as_str()
                ),
            )
            .parameter("runs", self.history.len().to_string())
            .parameter(
                "p strong / weak",
                format!("{} / {}", self.settings.p_strong, self.settings.p_weak),
            )
            .parameter("window", self.settings.window.to_string());
        if !filters.is_empty() {
            report = report.parameter(
                "filters",
                filters.trim().trim_matches(['(', ')']).to_string(),
            );
        }
        report.section(section).render()
    }
}

fn effect(c: &ChangePoint, metric: &Metric) -> &'static str {
    if c.is_regression(better(metric.direction)) {
        "regression"
    } else {
        "improvement"
    }
}

fn point(p: &HistoryPoint) -> TrendPoint {
    TrendPoint {
        command: p.command.clone(),
        hostname: p.hostname.clone(),
        run: p.run,
        run_uuid: p.run_uuid.clone(),
        samples: p.samples,
        started_at: format_timestamp(p.started_at),
        subject: p.subject.name.clone(),
        value: p.value,
        workload: p.workload.clone(),
    }
}

/// Subject attributes a compare run of a git subject carries (dyno-compare's record):
/// the commit it measured and the comparison file it ran.
pub const GIT_COMMIT: &str = "git_commit";
/// See [`GIT_COMMIT`].
pub const COMPARISON_FILE: &str = "comparison_file";

/// `dyno compare bisect FILE --good BEFORE --bad AFTER` for two runs of a git subject of
/// one comparison file at two commits; `None` for any other pair.
pub fn bisect_command(before: &HistoryPoint, after: &HistoryPoint) -> Option<String> {
    let of = |p: &HistoryPoint| {
        let a = &p.subject.attributes;
        // A bisection's own steps are stored as `FILE#step`: the file is FILE.
        let file = a.get(COMPARISON_FILE)?.split('#').next()?.to_string();
        Some((file, a.get(GIT_COMMIT)?.clone()))
    };
    let ((file, good), (other, bad)) = (of(before)?, of(after)?);
    (file == other && good != bad).then(|| {
        format!(
            "dyno compare bisect {} --good {good} --bad {bad}",
            shell_word(&file)
        )
    })
}

/// `word` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn change(c: &ChangePoint, history: &[HistoryPoint], effect: &'static str) -> TrendChange {
    let p = &history[c.index];
    let bisect = c
        .index
        .checked_sub(1)
        .and_then(|before| bisect_command(&history[before], p));
    TrendChange {
        bisect,
        effect,
        index: c.index,
        mean_after: c.mean_after,
        mean_before: c.mean_before,
        p_value: c.p_value,
        relative_change: c.relative_change.is_finite().then_some(c.relative_change),
        run: p.run,
        run_uuid: p.run_uuid.clone(),
        started_at: format_timestamp(p.started_at),
        strength: c.strength.as_str(),
    }
}

/// A relative change as `+1.2%`, `-` when not finite.
pub fn percent(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", x * 100.0)
    } else {
        "-".into()
    }
}

/// The verdict on the newest run in one line.
fn verdict_line(
    metric: &Metric,
    points: &[HistoryPoint],
    changes: &[ChangePoint],
    regression: Option<usize>,
    recent: usize,
) -> String {
    let n = points.len();
    let value = |v: f64| format_value(v, metric.unit);
    if let Some(c) = regression.map(|i| &changes[i]) {
        let run = &points[c.index];
        return format!(
            "regression: {} moved from {} to {} ({}, {}) at run {} ({}); the newest run, {}, is {} run(s) after it",
            metric.name,
            value(c.mean_before),
            value(c.mean_after),
            percent(c.relative_change),
            dyno_report::format_p_clause(c.p_value),
            run.run,
            format_timestamp(run.started_at),
            points[n - 1].run,
            n - 1 - c.index,
        );
    }
    let strong = changes
        .iter()
        .filter(|c| c.strength == Strength::Strong)
        .max_by_key(|c| c.index);
    match strong {
        None => format!("no regression: no strong change point in {n} runs of {}", metric.name),
        Some(c) if c.is_regression(better(metric.direction)) => format!(
            "no new regression: the latest strong change point (run {}, {}) is a regression {} runs before the newest, beyond --recent {}",
            points[c.index].run,
            percent(c.relative_change),
            n - c.index,
            recent
        ),
        Some(c) => format!(
            "no regression: the latest strong change point (run {}, {}) is an improvement",
            points[c.index].run,
            percent(c.relative_change)
        ),
    }
}

/// What a history mixes that should be one series: several subjects, hosts or workloads
/// (a change point may then be a switch between them, not a change of either), each with
/// the flag that follows one.
pub fn mixed_series(points: &[HistoryPoint]) -> Vec<String> {
    let distinct = |get: &dyn Fn(&HistoryPoint) -> String| {
        let mut v: Vec<String> = points.iter().map(get).collect();
        v.sort();
        v.dedup();
        v
    };
    let mut out = Vec::new();
    for (what, flag, names) in [
        (
            "subjects",
            "--subject",
            distinct(&|p| p.subject.name.clone()),
        ),
        ("hosts", "--host", distinct(&|p| p.hostname.clone())),
        (
            "workloads",
            "--workload",
            distinct(&|p| p.workload.clone().unwrap_or_default()),
        ),
    ] {
        if names.len() > 1 {
            let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
            out.push(format!(
                "this history mixes {} {what} ({}{}): a change point may be a switch between them; {flag} follows one",
                names.len(),
                shown.join(", "),
                if names.len() > 5 { ", ..." } else { "" }
            ));
        }
    }
    out
}

/// `; did you mean X?` for the stored metric names closest to `name` (case-insensitive
/// edit distance at most a third of its length, or one containing the other), else the
/// list of names when it is short.
pub fn metric_suggestion(name: &str, names: &[String]) -> String {
    let lower = name.to_lowercase();
    let mut close: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|n| {
            let other = n.to_lowercase();
            let d = edit_distance(&lower, &other);
            let near = d <= (lower.chars().count() / 3).max(1)
                || other.contains(&lower)
                || lower.contains(&other);
            near.then_some((d, n))
        })
        .collect();
    close.sort();
    match close.as_slice() {
        [] if names.is_empty() => "; the store has no samples yet".into(),
        [] if names.len() <= 12 => format!("; it has {}", names.join(", ")),
        [] => String::new(),
        found => {
            let names: Vec<&str> = found.iter().take(3).map(|(_, n)| n.as_str()).collect();
            format!("; did you mean {}?", names.join(" or "))
        }
    }
}

/// Levenshtein distance between two strings, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_between_two_commits_of_one_file_names_its_bisect() {
        let at = |commit: &str, file: &str| HistoryPoint {
            run: 1,
            run_uuid: String::new(),
            started_at: 0.0,
            command: "compare".into(),
            subject: dyno_model::Subject::new(dyno_model::SubjectKind::Release, "node")
                .with(GIT_COMMIT, commit)
                .with(COMPARISON_FILE, file),
            hostname: "h".into(),
            workload: None,
            value: 1.0,
            samples: 1,
            metric: Metric::new(
                "cpu",
                dyno_model::Unit::Seconds,
                dyno_model::Direction::LowerIsBetter,
            ),
        };
        let (a, b) = (at("aaa", "/x/cmp.toml"), at("bbb", "/x/cmp.toml"));
        assert_eq!(
            bisect_command(&a, &b).as_deref(),
            Some("dyno compare bisect /x/cmp.toml --good aaa --bad bbb")
        );
        assert_eq!(bisect_command(&a, &a), None, "one commit");
        let spaced = at("bbb", "/my files/cmp.toml#test-1");
        assert_eq!(bisect_command(&a, &spaced), None, "another file");
        assert_eq!(
            bisect_command(&at("aaa", "/my files/cmp.toml"), &spaced).as_deref(),
            Some("dyno compare bisect '/my files/cmp.toml' --good aaa --bad bbb")
        );
        let mut plain = a.clone();
        plain.subject.attributes.clear();
        assert_eq!(bisect_command(&plain, &b), None, "not a git subject");
    }

    #[test]
    fn close_names_are_suggested() {
        let names: Vec<String> = ["Blake2256", "Sr25519Verify", "MemoryCopy", "tps"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            metric_suggestion("sr25519verfy", &names),
            "; did you mean Sr25519Verify?"
        );
        assert_eq!(
            metric_suggestion("Blake2", &names),
            "; did you mean Blake2256?"
        );
        assert_eq!(
            metric_suggestion("latency", &names),
            "; it has Blake2256, Sr25519Verify, MemoryCopy, tps"
        );
        assert_eq!(
            metric_suggestion("x", &[]),
            "; the store has no samples yet"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn percents_are_signed_and_dash_when_not_finite() {
        assert_eq!(percent(0.0123), "+1.2%");
        assert_eq!(percent(-0.5), "-50.0%");
        assert_eq!(percent(f64::INFINITY), "-");
    }
}
