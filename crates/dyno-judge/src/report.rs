//! What people read: the verdict table, observations written from the numbers, and the
//! self-contained HTML report. Returns data and strings; never prints or writes files.

use crate::comparison::{ComparisonMeta, Workload};
use crate::family::{summary_lines, UnjudgedReason};
use crate::verdict::{Judgement, MetricVerdict, RunRow, RunTable};
use dyno_exec::{Execution, Outcome, SeriesKind};
use dyno_model::{format_value, Direction, Host, Metric, Unit};
use dyno_report::plot::{BoxPlot, CdfPlot, TimeSeriesPlot};
use dyno_report::{Align, Cell, HtmlReport, Section, Table};
use dyno_stats::Verdict;

/// The stable name of a verdict in JSON (snake_case, never a display label).
pub fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "regression",
        Verdict::Improvement => "improvement",
        Verdict::NoSignificantChange => "no_significant_change",
    }
}

/// The schema of [`verdicts_json`] (docs/output.md).
pub const VERDICTS_SCHEMA: &str = "dyno.compare.verdicts/2";

/// The display label of a verdict.
pub fn verdict_label(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "regression",
        Verdict::Improvement => "improvement",
        Verdict::NoSignificantChange => "no significant change",
    }
}

/// The verdict of one comparison as shown: its label, marked `(secondary)` when the
/// comparison names primary metrics and this is not one (reported, not the verdict).
pub fn verdict_text(v: &MetricVerdict) -> String {
    if v.secondary {
        format!("{} (secondary)", verdict_label(v.verdict()))
    } else {
        verdict_label(v.verdict()).to_string()
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1}%", (x - 1.0) * 100.0)
    } else {
        "n/a (baseline 0)".into()
    }
}

/// The table of verdicts: one row per workload, metric and candidate.
pub fn verdict_table(meta: &ComparisonMeta, j: &Judgement) -> Table {
    verdict_rows(meta, j, j.verdicts.iter())
}

/// The verdict table of what decides the comparison: its primary rows only (every row
/// when the comparison judges no metric apart, so nothing is hidden).
pub fn primary_table(meta: &ComparisonMeta, j: &Judgement) -> Table {
    verdict_rows(meta, j, j.verdicts.iter().filter(|v| !v.secondary))
}

/// The secondary rows alone (empty when there are none).
pub fn secondary_table(meta: &ComparisonMeta, j: &Judgement) -> Table {
    verdict_rows(meta, j, j.verdicts.iter().filter(|v| v.secondary))
}

fn verdict_rows<'a>(
    meta: &ComparisonMeta,
    j: &Judgement,
    verdicts: impl Iterator<Item = &'a MetricVerdict>,
) -> Table {
    let mut t = Table::new(format!(
        "{} (baseline) vs {}",
        meta.subjects.first().map(String::as_str).unwrap_or("?"),
        meta.subjects.get(1..).unwrap_or_default().join(", ")
    ))
    .column("workload", Align::Left)
    .column("metric", Align::Left)
    .column("candidate", Align::Left)
    .column("baseline median", Align::Right)
    .column("candidate median", Align::Right)
    .column(change_header(j), Align::Right)
    .column("95% CI", Align::Right)
    .column("p (Holm)", Align::Right)
    .column("verdict", Align::Left)
    .column("detectable", Align::Right);
    for v in verdicts {
        let unit = v.metric.unit;
        let mut row = vec![
            Cell::new(&v.workload),
            Cell::new(&v.metric.name),
            Cell::new(&v.candidate),
            Cell::new(format_value(v.baseline_median(), unit)),
            Cell::new(format_value(v.candidate_median(), unit)),
        ];
        row.extend(change_cells(Some(v)));
        row.push(Cell::new(detectable(v)));
        t.push_row(row);
    }
    t
}

/// What the change column shows: the estimate the test judged (beside the medians it
/// may differ from, so the header says which); one name for the whole table, as one test
/// judges a comparison.
fn change_header(j: &Judgement) -> String {
    let mut names = j
        .verdicts
        .iter()
        .map(|v| crate::verdict::estimate_name(&v.comparison.test));
    match names.next() {
        Some(first) if names.all(|n| n == first) => format!("change ({first})"),
        Some(_) => "change (each metric's test's estimate)".into(),
        None => "change".into(),
    }
}

/// The minimum detectable change of a verdict as a cell: "+-3.1%", "none" when no change
/// could be flagged, "n/a" when the spread is unknown.
fn detectable(v: &MetricVerdict) -> String {
    match v.power {
        Some(p) => match p.min_detectable_change {
            Some(c) => format!("±{}", crate::power::change_text(c)),
            None => "none".into(),
        },
        None => "n/a".into(),
    }
}

/// How a verdict reads in a list: "cpu_s_per_tx of v2 +10.2% (regression)", the
/// workload named when the comparison has several.
fn flagged_item(v: &MetricVerdict, workloads: usize) -> String {
    let workload = if workloads > 1 {
        format!("{}: ", v.workload)
    } else {
        String::new()
    };
    format!(
        "{workload}{} of {} {} ({})",
        v.metric.name,
        v.candidate,
        pct(v.change().estimate),
        verdict_label(v.verdict())
    )
}

/// `items` joined, the first `most` of them, then how many more.
fn some_of(items: &[String], most: usize) -> String {
    let mut shown = items[..items.len().min(most)].join(", ");
    if items.len() > most {
        shown += &format!(" and {} more", items.len() - most);
    }
    shown
}

fn workload_count(j: &Judgement) -> usize {
    let mut names: Vec<&str> = j.verdicts.iter().map(|v| v.workload.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

/// The answer, first line of a comparison's report: the verdict on its primary metrics
/// (what `--fail-on-regression` and the exit code go by) and which of them moved.
///
/// "verdict: regression: 1 of 2 primary metrics flagged: cpu_s_per_tx of v2 +10.2%
/// (regression)"; "verdict: no significant change on 2 primary metrics".
pub fn headline(j: &Judgement) -> String {
    let primary: Vec<&MetricVerdict> = j.verdicts.iter().filter(|v| !v.secondary).collect();
    if primary.is_empty() {
        return "verdict: nothing judged (the notes below say why)".into();
    }
    let workloads = workload_count(j);
    let flagged: Vec<String> = primary
        .iter()
        .filter(|v| v.verdict() != Verdict::NoSignificantChange)
        .map(|v| flagged_item(v, workloads))
        .collect();
    let overall = if j.has_regression() {
        Verdict::Regression
    } else if flagged.is_empty() {
        Verdict::NoSignificantChange
    } else {
        Verdict::Improvement
    };
    let metrics = |n: usize| if n == 1 { "metric" } else { "metrics" };
    if flagged.is_empty() {
        return format!(
            "verdict: {} on {} primary {}",
            verdict_label(overall),
            primary.len(),
            metrics(primary.len())
        );
    }
    format!(
        "verdict: {}: {} of {} primary {} flagged: {}",
        verdict_label(overall),
        flagged.len(),
        primary.len(),
        metrics(primary.len()),
        some_of(&flagged, 5)
    )
}

/// The secondary family in one line: how many metrics, which were flagged, and how to
/// list them (`listed`: they are in the table above); `None` when every metric is
/// primary.
///
/// "secondary: 105 metrics judged apart from the verdict, 2 flagged (node:x of v2 +4.0%
/// (regression), ...); --secondary lists them"
pub fn secondary_line(j: &Judgement, listed: bool) -> Option<String> {
    let secondary: Vec<&MetricVerdict> = j.verdicts.iter().filter(|v| v.secondary).collect();
    if secondary.is_empty() {
        return None;
    }
    let workloads = workload_count(j);
    let flagged: Vec<String> = secondary
        .iter()
        .filter(|v| v.verdict() != Verdict::NoSignificantChange)
        .map(|v| flagged_item(v, workloads))
        .collect();
    let flagged = match flagged.len() {
        0 => "none flagged".to_string(),
        n => format!("{n} flagged: {}", some_of(&flagged, 5)),
    };
    let rows = if secondary.len() == 1 { "row" } else { "rows" };
    Some(format!(
        "secondary: {} {rows} judged apart from the verdict, {flagged}{}",
        secondary.len(),
        if listed {
            ""
        } else {
            "; --secondary lists them"
        }
    ))
}

/// One line per primary verdict saying what it could have flagged (stated power), e.g.
/// "value: cpu_percent of v2 could flag a change of 3.1% with 80% power".
pub fn power_lines(j: &Judgement) -> Vec<String> {
    j.verdicts
        .iter()
        .filter(|v| !v.secondary)
        .filter_map(|v| {
            let p = v.power?;
            Some(format!(
                "{}: {} of {} {}",
                v.workload,
                v.metric.name,
                v.candidate,
                p.sentence()
            ))
        })
        .collect()
}

/// The metrics not judged, as a table: workload, metric, candidate and why.
pub fn unjudged_table(j: &Judgement) -> Table {
    let mut t = Table::new("Metrics not judged")
        .column("workload", Align::Left)
        .column("metric", Align::Left)
        .column("candidate", Align::Left)
        .column("why", Align::Left);
    for u in &j.unjudged {
        let why = match &u.reason {
            UnjudgedReason::Unchanged { value } => format!("{value} in every execution"),
            UnjudgedReason::Missing { subject } => format!("never reported by {subject}"),
        };
        t.push_row(vec![
            Cell::new(&u.workload),
            Cell::new(&u.metric),
            Cell::new(&u.candidate),
            Cell::new(why),
        ]);
    }
    t
}

/// Delta, 95% interval of the ratio, Holm-adjusted p and verdict of one comparison, or
/// "n/a" cells when there is none (too few complete rounds).
fn change_cells(v: Option<&MetricVerdict>) -> [Cell; 4] {
    let Some(v) = v else {
        return [
            Cell::new("n/a"),
            Cell::new("n/a"),
            Cell::new("n/a"),
            Cell::new("not judged"),
        ];
    };
    let r = v.change();
    let ci = if r.low.is_finite() && r.high.is_finite() {
        format!("{}..{}", pct(r.low), pct(r.high))
    } else {
        "n/a".into()
    };
    let verdict = Cell::new(verdict_text(v));
    let verdict = match v.verdict() {
        Verdict::Regression => verdict.bad(),
        Verdict::Improvement => verdict.good(),
        Verdict::NoSignificantChange => verdict,
    };
    [
        Cell::new(pct(r.estimate)),
        Cell::new(ci),
        Cell::new(format!("{:.3}", v.comparison.p_adjusted)),
        verdict,
    ]
}

/// Metrics whose names start with this are per-stage timings of block production
/// (`jsonl:stage_leader_check_s`, ...): one row each in [`stage_table`].
pub const STAGE_PREFIX: &str = "jsonl:stage_";

/// The per-stage timing table of one workload: for every `jsonl:stage_*` metric, in the
/// order the node wrote them, each subject's median over its complete rounds of the
/// per-round medians, then each candidate's change against the baseline with the 95%
/// interval of the ratio, the Holm-adjusted p and the verdict (the same numbers as the
/// verdict table). `None` when the workload has no stage metric.
pub fn stage_table(
    workload: &str,
    meta: &ComparisonMeta,
    executions: &[Execution],
    j: &Judgement,
) -> Option<Table> {
    let runs = RunTable::of(executions, &meta.subjects, &meta.work);
    let rows: Vec<_> = runs
        .rows
        .iter()
        .filter(|r| r.workload == workload && r.metric.name.starts_with(STAGE_PREFIX))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let candidates = meta.subjects.get(1..).unwrap_or_default();
    let mut t = Table::new(format!(
        "Block production stages, {workload}: median over rounds of each round's median"
    ))
    .column("stage", Align::Left);
    for (i, s) in meta.subjects.iter().enumerate() {
        let header = if i == 0 {
            format!("{s} (baseline)")
        } else {
            s.clone()
        };
        t = t.column(header, Align::Right);
    }
    for c in candidates {
        let head = |h: &str| {
            if candidates.len() > 1 {
                format!("{c}: {h}")
            } else {
                h.to_string()
            }
        };
        t = t
            .column(head(&change_header(j)), Align::Right)
            .column(head("95% CI"), Align::Right)
            .column(head("p (Holm)"), Align::Right)
            .column(head("verdict"), Align::Left);
    }
    for RunRow { metric, values, .. } in rows {
        let stage = metric.name.trim_start_matches(STAGE_PREFIX);
        let mut row = vec![Cell::new(stage.strip_suffix("_s").unwrap_or(stage))];
        for v in values {
            row.push(Cell::new(match dyno_stats::median(v) {
                Some(m) => format_value(m, metric.unit),
                None => "n/a".into(),
            }));
        }
        for c in candidates {
            let verdict = j.verdicts.iter().find(|v| {
                v.workload == workload && v.metric.name == metric.name && &v.candidate == c
            });
            row.extend(change_cells(verdict));
        }
        t.push_row(row);
    }
    Some(t)
}

/// [`stage_table`] of every workload that has stage metrics, in workload order (for a
/// terminal summary).
pub fn stage_tables(meta: &ComparisonMeta, executions: &[Execution], j: &Judgement) -> Vec<Table> {
    meta.workloads
        .iter()
        .filter_map(|w| stage_table(w, meta, executions, j))
        .collect()
}

/// The verdicts as JSON, one object per row of [`verdict_table`], full precision. Field
/// names are stable: `workload`, `metric`, `unit`, `direction`, `candidate`,
/// `baseline_values`, `candidate_values`, `baseline_median`, `candidate_median`, `ratio`,
/// `ratio_low`, `ratio_high`, `p_value`, `p_holm`, `verdict` (`regression`,
/// `improvement`, `no_significant_change`), `primary` (false: a secondary metric, judged
/// in a Holm family of its own and not part of the verdict), `log_ratio_sd` (paired t-test
/// only: the sd of the per-round log ratios, what decides the rounds a change needs),
/// `min_detectable_change` (the relative change this verdict would have flagged with 80%
/// power, at least the noise band; `null` when none could be flagged or the spread is
/// unknown) and `power` (its inputs: `rounds`, `log_sd`, `family`,
/// `limited_by_noise_band`, `rounds_for_reference_change` for a 5% change,
/// `rounds_to_reach_alpha`). `unjudged` lists the metrics left out of every family:
/// `workload`, `metric`, `candidate`, `reason` (`unchanged` with its `value`, or
/// `missing` with the `subject` that never reported it). `median_ratio`,
/// `median_ratio_low`, `median_ratio_high`: a second estimate, labelled so (the median
/// of the per-round ratios and its 95% order-statistic interval when judged by round, the
/// ratio of medians unpaired); `ratio` is the one every output shows. `precision`: the lines about a precision target (empty
/// without one); `noise`: `metrics` (per primary verdict: `rounds`, `window_s`,
/// `log_ratio_variance`, `within`, `between`) and `recommendations` (per workload:
/// `target`, `overhead_s`, `current` and `fastest`, each `window_s`, `rounds`,
/// `minutes`). Non-finite ratios are `null`.
pub fn verdicts_json(j: &Judgement) -> serde_json::Value {
    let finite = |x: f64| {
        if x.is_finite() {
            serde_json::json!(x)
        } else {
            serde_json::Value::Null
        }
    };
    let rows: Vec<serde_json::Value> = j
        .verdicts
        .iter()
        .map(|v| {
            let r = v.change();
            serde_json::json!({
                "workload": v.workload,
                "metric": v.metric.name,
                "unit": v.metric.unit.symbol(),
                "direction": v.metric.direction.as_str(),
                "candidate": v.candidate,
                "baseline_values": v.baseline_values,
                "candidate_values": v.candidate_values,
                "baseline_median": finite(v.baseline_median()),
                "candidate_median": finite(v.candidate_median()),
                "ratio": finite(r.estimate),
                "ratio_low": finite(r.low),
                "ratio_high": finite(r.high),
                "test": v.comparison.test.name(),
                "p_value": v.comparison.test.p_value(),
                "p_holm": v.comparison.p_adjusted,
                "verdict": verdict_name(v.verdict()),
                "primary": !v.secondary,
                "log_ratio_sd": match v.comparison.test {
                    dyno_stats::SignificanceTest::PairedT(t) => finite(t.std_error * (t.df + 1.0).sqrt()),
                    dyno_stats::SignificanceTest::Sequential(t) => finite(t.std_error * (t.df + 1.0).sqrt()),
                    _ => serde_json::Value::Null,
                },
                "median_ratio": finite(v.median_of_round_ratios().estimate),
                "median_ratio_low": finite(v.median_of_round_ratios().low),
                "median_ratio_high": finite(v.median_of_round_ratios().high),
                "min_detectable_change": v.power.and_then(|p| p.min_detectable_change),
                "power": v.power,
            })
        })
        .collect();
    serde_json::json!({
        "schema": VERDICTS_SCHEMA,
        "verdicts": rows,
        "unjudged": j.unjudged,
        "notes": j.notes,
        "precision": j.precision,
        "noise": j.noise,
    })
}

/// A sentence about one verdict, e.g. "value: cpu_percent of v2 rose 10.2% (CI 8.1% to
/// 12.0%), significant (p = 0.0004 after Holm): regression".
pub fn observation(v: &MetricVerdict) -> String {
    let r = v.change();
    let what = format!("{}: {} of {}", v.workload, describe(&v.metric), v.candidate);
    if !r.estimate.is_finite() {
        return format!(
            "{what} is {} where the baseline's is 0 (p = {:.4} after Holm): {}",
            format_value(v.candidate_median(), v.metric.unit),
            v.comparison.p_adjusted,
            verdict_text(v)
        );
    }
    let change = (r.estimate - 1.0) * 100.0;
    let dir = if change >= 0.0 { "rose" } else { "fell" };
    let ci = format!(
        "CI {:.1}% to {:.1}%",
        (r.low - 1.0) * 100.0,
        (r.high - 1.0) * 100.0
    );
    let significance = match v.verdict() {
        Verdict::NoSignificantChange if v.comparison.p_adjusted <= 0.05 => {
            "significant but inside the noise band".to_string()
        }
        Verdict::NoSignificantChange => {
            format!(
                "not significant (p = {:.3} after Holm)",
                v.comparison.p_adjusted
            )
        }
        _ => format!(
            "significant (p = {:.4} after Holm)",
            v.comparison.p_adjusted
        ),
    };
    format!(
        "{what} {dir} {:.1}% ({ci}), {significance}: {}",
        change.abs(),
        verdict_text(v)
    )
}

fn describe(m: &Metric) -> String {
    match m.name.as_str() {
        "cpu_percent" => "CPU use".into(),
        "rss_bytes" => "memory (RSS)".into(),
        "peak_rss_bytes" => "peak memory".into(),
        other => other.to_string(),
    }
}

/// The observations worth reading: every regression and improvement, then the largest
/// non-significant change per workload, so "nothing changed" is also said in numbers.
pub fn observations(j: &Judgement) -> Vec<(Verdict, String)> {
    observations_of(j, true)
}

/// [`observations`], the secondary family's flagged verdicts left out unless
/// `secondary` (the answer-first report names them in [`secondary_line`] instead).
pub fn observations_of(j: &Judgement, secondary: bool) -> Vec<(Verdict, String)> {
    let mut out: Vec<(Verdict, String)> = j
        .verdicts
        .iter()
        .filter(|v| v.verdict() != Verdict::NoSignificantChange)
        .filter(|v| secondary || !v.secondary)
        .map(|v| (v.verdict(), observation(v)))
        .collect();
    if out.is_empty() && !j.verdicts.is_empty() {
        let primary = j.verdicts.iter().filter(|v| !v.secondary).count();
        let secondary = j.verdicts.len() - primary;
        // The weakest primary verdict says how large a change could have gone unseen.
        let weakest = j
            .verdicts
            .iter()
            .filter(|v| !v.secondary)
            .filter_map(|v| Some((v, v.power?)))
            .max_by(|a, b| {
                let mdc = |p: &crate::power::StatedPower| {
                    p.min_detectable_change.unwrap_or(f64::INFINITY)
                };
                mdc(&a.1).total_cmp(&mdc(&b.1))
            });
        let power = match weakest {
            Some((v, p)) => match p.min_detectable_change {
                Some(c) => format!(
                    " Changes smaller than {} could go unseen (the least sensitive primary metric, {} of {}).",
                    crate::power::change_text(c),
                    v.metric.name,
                    v.workload
                ),
                None => format!(
                    " {} of {}: {}.",
                    v.metric.name,
                    v.workload,
                    p.sentence()
                ),
            },
            None => String::new(),
        };
        out.push((
            Verdict::NoSignificantChange,
            format!(
                "No significant change on any of {primary} primary comparisons ({secondary} secondary).{power}"
            ),
        ));
    }
    let mut workloads: Vec<&str> = j.verdicts.iter().map(|v| v.workload.as_str()).collect();
    workloads.dedup();
    // The largest unflagged primary change (the secondary family's wildest estimates,
    // a p99 of four rounds, say less).
    let any_primary = j.verdicts.iter().any(|v| !v.secondary);
    for w in workloads {
        let largest = j
            .verdicts
            .iter()
            .filter(|v| v.workload == w && v.verdict() == Verdict::NoSignificantChange)
            .filter(|v| !(any_primary && v.secondary))
            .filter(|v| v.comparison.ratio.estimate.is_finite())
            .max_by(|a, b| {
                let d = |v: &MetricVerdict| (v.comparison.ratio.estimate - 1.0).abs();
                d(a).total_cmp(&d(b))
            });
        if let Some(v) = largest {
            out.push((
                Verdict::NoSignificantChange,
                format!("Largest unflagged change: {}", observation(v)),
            ));
        }
    }
    out
}

/// What the rest of the machine used during each round's windows (the most of any of its
/// executions, percent of one core), and the round it used most in with its busiest
/// process: `None` when no execution measured it (a cluster, a synthetic node, a store
/// from before it was measured).
///
/// "r1 3.2, r2 45.0, r3 2.9; most in round 2: 45.0% of a core (busiest: rustc, pid 4242,
/// 38.0%)"
pub fn disturbance_line(executions: &[Execution]) -> Option<String> {
    let mut by_round: std::collections::BTreeMap<u32, &dyno_exec::Disturbance> = Default::default();
    for e in executions {
        let Some(d) = &e.disturbance else { continue };
        let worst = by_round.entry(e.round).or_insert(d);
        if d.other_cpu_percent > worst.other_cpu_percent {
            *worst = d;
        }
    }
    let (round, most) = by_round
        .iter()
        .max_by(|a, b| a.1.other_cpu_percent.total_cmp(&b.1.other_cpu_percent))?;
    let rounds: Vec<String> = by_round
        .iter()
        .map(|(r, d)| format!("r{} {:.1}", r + 1, d.other_cpu_percent))
        .collect();
    Some(format!(
        "other work on the machine, % of one core, by round: {}; most in round {}: {}",
        rounds.join(", "),
        round + 1,
        most.sentence()
    ))
}

/// One line per failed or interrupted execution, with the node's last output lines.
pub fn failures(executions: &[Execution]) -> Vec<String> {
    executions
        .iter()
        .filter_map(|e| match &e.outcome {
            Outcome::Complete => None,
            Outcome::Interrupted => Some(format!(
                "{} / {} round {}: interrupted",
                e.subject,
                e.workload,
                e.round + 1
            )),
            Outcome::Disturbed { reason } => Some(format!(
                "{} / {} round {}: disturbed, run again: {reason}",
                e.subject,
                e.workload,
                e.round + 1
            )),
            Outcome::Failed { reason, last_lines } => Some(format!(
                "{} / {} round {}: failed: {reason}{}",
                e.subject,
                e.workload,
                e.round + 1,
                if last_lines.is_empty() {
                    String::new()
                } else {
                    format!("; last output:\n    {}", last_lines.join("\n    "))
                }
            )),
        })
        .collect()
}

fn badge(v: Verdict) -> dyno_report::Verdict {
    match v {
        Verdict::Regression => dyno_report::Verdict::Regression,
        Verdict::Improvement => dyno_report::Verdict::Improvement,
        Verdict::NoSignificantChange => dyno_report::Verdict::NoChange,
    }
}

/// Everything the HTML report shows.
pub struct ReportInput<'a> {
    /// The comparison.
    pub meta: &'a ComparisonMeta,
    /// Its workloads as run.
    pub workloads: &'a [Workload],
    /// Host it ran on.
    pub host: &'a Host,
    /// Executions, in order.
    pub executions: &'a [Execution],
    /// Verdicts.
    pub judgement: &'a Judgement,
    /// Extra parameters (tool version, command line, run ids).
    pub parameters: Vec<(String, String)>,
}

/// The self-contained HTML report.
pub fn html(input: &ReportInput<'_>) -> String {
    let meta = input.meta;
    let mut report = HtmlReport::new(format!("dyno compare: {}", meta.subjects.join(" vs ")))
        .parameter("comparison", meta.id.clone())
        .parameter(
            "baseline",
            meta.subjects.first().cloned().unwrap_or_default(),
        )
        .parameter("rounds planned", meta.rounds.to_string())
        .parameter("noise band", format!("{}%", meta.noise_band * 100.0))
        .parameter("alpha (Holm, family-wise)", meta.alpha.to_string())
        .parameter("seed", meta.seed.to_string())
        .host(input.host);
    for w in input.workloads {
        report = report.parameter(
            format!("workload {}", w.name),
            format!(
                "{} tx/s, warm-up {} s, measured {} s",
                w.rate, w.warmup_s, w.measure_s
            ),
        );
    }
    for (k, v) in &input.parameters {
        report = report.parameter(k.clone(), v.clone());
    }
    let mut summary = Section::new("Verdicts").paragraph(headline(input.judgement));
    for (v, text) in observations(input.judgement) {
        summary = summary.verdict(badge(v), text);
    }
    for line in &input.judgement.precision {
        summary = summary.paragraph(format!("Precision: {line}"));
    }
    for line in power_lines(input.judgement) {
        summary = summary.paragraph(line);
    }
    for line in input.judgement.noise.lines() {
        summary = summary.paragraph(format!("Noise: {line}"));
    }
    for n in &input.judgement.notes {
        summary = summary.note(n.clone());
    }
    for f in failures(input.executions) {
        summary = summary.note(f);
    }
    summary = summary.table(primary_table(meta, input.judgement));
    if let Some(line) = secondary_line(input.judgement, true) {
        summary = summary.details(line, secondary_table(meta, input.judgement));
    }
    let unjudged = summary_lines(&input.judgement.unjudged);
    if !unjudged.is_empty() {
        summary = summary.details(unjudged.join("; "), unjudged_table(input.judgement));
    }
    report = report.section(summary);
    if let Some(table) = disturbance::disturbance_table(input.executions) {
        let line = disturbance_line(input.executions).unwrap_or_default();
        report = report.section(Section::new("Disturbance").paragraph(line).table(table));
    }
    for w in input.workloads {
        let section = workload_section(&w.name, meta, input.executions, input.judgement);
        report = report.section(spread_plots(section, &w.name, meta, input.judgement));
    }
    report
        .footer("Per-round values: CPU and other counters as their total over the measured window divided by it, levels as medians, peaks as maxima. Verdicts need p <= alpha after Holm within their family (primary or secondary) and a change outside the noise band; \"detectable\" is the change each would have flagged with 80% power.")
        .render()
}

/// Box plots of the per-round values (one point per round) of CPU use and of every
/// metric with a verdict other than "no significant change", so the spread behind each
/// verdict is visible.
fn spread_plots(
    mut section: Section,
    workload: &str,
    meta: &ComparisonMeta,
    j: &Judgement,
) -> Section {
    let mut shown: Vec<&str> = Vec::new();
    for v in j.verdicts.iter().filter(|v| v.workload == workload) {
        let wanted = v.metric.name == "cpu_percent" || v.verdict() != Verdict::NoSignificantChange;
        if !wanted || shown.contains(&v.metric.name.as_str()) {
            continue;
        }
        shown.push(&v.metric.name);
        let mut plot = BoxPlot::new(
            format!("{}, {workload}: per-round values", v.metric.name),
            v.metric.clone(),
        )
        .subject(meta.subjects[0].clone(), v.baseline_values.clone())
        .baseline(format!("{} median", meta.subjects[0]), v.baseline_median());
        for c in j
            .verdicts
            .iter()
            .filter(|c| c.workload == workload && c.metric.name == v.metric.name)
        {
            plot = plot.subject(c.candidate.clone(), c.candidate_values.clone());
        }
        section = section.plot_result(
            format!("{} per round ({})", v.metric.name, verdict_text(v)),
            plot.render_svg(),
        );
    }
    section
}

fn workload_section(
    workload: &str,
    meta: &ComparisonMeta,
    executions: &[Execution],
    j: &Judgement,
) -> Section {
    let mut section = Section::new(format!("Workload {workload}"));
    let runs: Vec<&Execution> = executions
        .iter()
        .filter(|e| e.workload == workload && e.outcome == Outcome::Complete)
        .collect();
    let series_plot = |name: &str, title: &str| {
        let metric = runs
            .iter()
            .flat_map(|e| e.series.iter())
            .find(|s| s.metric.name == name)
            .map(|s| s.metric.clone())?;
        let mut plot = TimeSeriesPlot::new(title, metric);
        for subject in &meta.subjects {
            // The first complete round of each subject, so lines are comparable.
            let Some(e) = runs.iter().find(|e| &e.subject == subject) else {
                continue;
            };
            if let Some(s) = e.series.iter().find(|s| s.metric.name == name) {
                plot = plot.series(
                    format!("{subject} (round {})", e.round + 1),
                    s.points.clone(),
                );
            }
        }
        Some(plot.render_svg())
    };
    for (name, title) in [("cpu_percent", "CPU use"), ("rss_bytes", "Resident memory")] {
        if let Some(svg) = series_plot(name, &format!("{title}, {workload}")) {
            section = section.plot_result(format!("{title} over the measured window"), svg);
        }
    }
    if let Some(table) = stage_table(workload, meta, executions, j) {
        section = section.table(table);
    }
    // Latency distributions: every observation (or per-second value) of every complete
    // round, pooled per subject. Counters and peaks are not distributions.
    let mut names: Vec<Metric> = Vec::new();
    for s in runs.iter().flat_map(|e| e.series.iter()) {
        let wanted = s.metric.name.contains("latency")
            && matches!(s.kind, SeriesKind::Observations | SeriesKind::Gauge);
        if wanted && !names.iter().any(|m| m.name == s.metric.name) {
            names.push(s.metric.clone());
        }
    }
    let rounds = |subject: &str| runs.iter().filter(|e| e.subject == subject).count();
    for metric in names {
        let title = format!(
            "{}, {workload}: all observations of all complete rounds",
            metric.name
        );
        let mut plot = CdfPlot::new(title, metric.clone());
        for subject in &meta.subjects {
            let values: Vec<f64> = runs
                .iter()
                .filter(|e| &e.subject == subject)
                .flat_map(|e| e.series.iter())
                .filter(|s| s.metric.name == metric.name)
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .collect();
            if !values.is_empty() {
                let label = format!(
                    "{subject} ({} rounds, {} values)",
                    rounds(subject),
                    values.len()
                );
                plot = plot.series(label, values);
            }
        }
        section = section.plot_result(
            format!("Distribution of {}", metric.name),
            plot.render_svg(),
        );
    }
    if runs.is_empty() {
        section = section.note("no complete run of this workload");
    }
    section
}

/// CPU use as a metric, for callers that plot it.
pub fn cpu_metric() -> Metric {
    Metric::new("cpu_percent", Unit::Percent, Direction::LowerIsBetter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::TestKind;
    use crate::synthetic::Synthetic;
    use crate::verdict::tests::{run, workloads};

    /// Three side-by-side rounds of `a` and `b`, a hog of 90% of a core inside round 2's
    /// window (each start: 2 s overhead, 1 s warm-up, one 10 s window).
    pub(crate) fn hog_in_round_two() -> Vec<Execution> {
        let mut ex = Synthetic::new(3);
        ex.hogs.push(crate::synthetic::Hog {
            from_s: 17.0,
            until_s: 22.0,
            cpu_percent: 90.0,
            slowdown: 1.3,
        });
        (0..3)
            .flat_map(|r| ex.start(&["a", "b"], "value", 100.0, r, 1, 1.0, 10.0))
            .collect()
    }

    #[test]
    fn a_hog_inside_a_side_by_side_round_is_shown_for_that_round_and_not_judged() {
        let execs = hog_in_round_two();
        assert_eq!(
            execs[2].window_at, execs[3].window_at,
            "one window for both"
        );
        assert_ne!(execs[0].window_at, execs[2].window_at);
        let line = disturbance_line(&execs).unwrap();
        assert_eq!(
            line,
            "other work on the machine, % of one core, by round: r2 45.0; most in round 2: \
             45.0% of a core (busiest: hog, pid 1, 45.0%)"
        );
        let table =
            crate::verdict::RunTable::of(&execs, &["a".into(), "b".into()], &Default::default());
        assert!(table
            .rows
            .iter()
            .all(|r| !r.metric.name.starts_with("host:")));
        assert_eq!(disturbance_line(&run(2, &Synthetic::new(1))), None);
    }

    #[test]
    fn every_output_shows_the_one_change_the_test_judged() {
        // Paired and unpaired, the table, the sentences, the JSON and the HTML report say
        // the same change and interval for every metric, to the digits shown.
        for test in [TestKind::Paired, TestKind::SignedRank, TestKind::Unpaired] {
            let mut ex = Synthetic::new(4);
            ex.noise = 0.05;
            ex.slowdown.insert("b".into(), 1.08);
            let execs = run(10, &ex);
            let subjects: Vec<String> = vec!["a".into(), "b".into()];
            let settings = dyno_stats::ComparisonSettings {
                resamples: 500,
                ..Default::default()
            };
            let options = crate::verdict::JudgeOptions {
                test,
                ..Default::default()
            };
            let j = crate::verdict::judge_with(&execs, &subjects, &settings, &options);
            assert!(!j.verdicts.is_empty());
            let workloads = workloads();
            let meta = ComparisonMeta::of(&["a", "b"], &workloads, 10);
            let table = verdict_table(&meta, &j);
            let json = verdicts_json(&j);
            let obs = observations(&j);
            let page = html(&ReportInput {
                meta: &meta,
                workloads: &workloads,
                host: &Host::default(),
                executions: &execs,
                judgement: &j,
                parameters: vec![],
            });
            let name = crate::verdict::estimate_name(&j.verdicts[0].comparison.test);
            assert!(page.contains(&format!("change ({name})")), "{test:?}");
            let mut sentences = 0;
            for (i, v) in j.verdicts.iter().enumerate() {
                let c = v.change();
                if !c.estimate.is_finite() {
                    continue;
                }
                let row = &table.rows[i];
                assert_eq!(row[1].text, v.metric.name);
                assert_eq!(row[5].text, pct(c.estimate), "{test:?} {}", v.metric.name);
                assert_eq!(row[6].text, format!("{}..{}", pct(c.low), pct(c.high)));
                assert_eq!(json["verdicts"][i]["ratio"].as_f64(), Some(c.estimate));
                // Not every verdict has a sentence (the flagged ones and the largest
                // unflagged change do); each that has one says the table's numbers.
                let start = format!(
                    "{}: {} of {} ",
                    v.workload,
                    describe(&v.metric),
                    v.candidate
                );
                if let Some((_, said)) = obs.iter().find(|(_, t)| t.starts_with(&start)) {
                    let shown = format!("{:.1}%", ((c.estimate - 1.0) * 100.0).abs());
                    assert!(said.contains(&format!(" {shown} (CI ")), "{said} / {shown}");
                    let ci = format!(
                        "CI {:.1}% to {:.1}%",
                        (c.low - 1.0) * 100.0,
                        (c.high - 1.0) * 100.0
                    );
                    assert!(said.contains(&ci), "{said} / {ci}");
                    sentences += 1;
                }
                assert!(
                    page.contains(&pct(c.estimate)),
                    "{test:?} {}",
                    v.metric.name
                );
            }
            assert!(sentences > 0, "{test:?}: no sentence checked");
        }
    }

    #[test]
    fn report_says_what_regressed_in_numbers() {
        let mut ex = Synthetic::new(2);
        ex.slowdown.insert("b".into(), 0.9);
        let mut execs = run(8, &ex);
        // What the reference node logs as JSON lines: latencies (drawn as CDFs), a
        // throughput (not drawn: not a latency) and stage timings (a table), with b's
        // forging stage 30% slower.
        let logged = |name: &str, level: f64| dyno_exec::Series {
            metric: Metric::new(
                name,
                Unit::Seconds,
                if name.ends_with("tps") {
                    Direction::HigherIsBetter
                } else {
                    Direction::LowerIsBetter
                },
            ),
            kind: SeriesKind::Observations,
            points: (0..51)
                .map(|i| (i as f64, level * (1.0 + 0.001 * (i as f64 - 25.0))))
                .collect(),
        };
        for e in execs.iter_mut() {
            // Rounds 0..8 spread evenly around 1: the median over rounds is `level`.
            let jitter = 1.0 + 0.001 * (e.round as f64 - 3.5);
            let forged = if e.subject == "b" { 0.39 * 1.3 } else { 0.39 };
            e.series.extend([
                logged("jsonl:stage_leader_check_s", 1.2e-5 * jitter),
                logged("jsonl:stage_forged_s", forged * jitter),
                logged("jsonl:tps", 2000.0 * jitter),
                logged("jsonl:latency_s", 0.01 * jitter),
            ]);
        }
        let subjects: Vec<String> = vec!["a".into(), "b".into()];
        let settings = dyno_stats::ComparisonSettings {
            resamples: 1000,
            ..Default::default()
        };
        let j = crate::verdict::judge(&execs, &subjects, &settings);
        let obs = observations(&j);
        let cpu = obs
            .iter()
            .find(|(_, t)| t.starts_with("value: CPU use of b fell"))
            .unwrap();
        assert_eq!(cpu.0, Verdict::Improvement);
        assert!(cpu.1.contains("significant (p = "), "{}", cpu.1);
        let workloads = workloads();
        let meta = ComparisonMeta::of(&["a", "b"], &workloads, 8);
        let table = verdict_table(&meta, &j);
        assert_eq!(table.rows.len(), j.verdicts.len());
        let html = html(&ReportInput {
            meta: &meta,
            workloads: &workloads,
            host: &Host::default(),
            executions: &execs,
            judgement: &j,
            parameters: vec![],
        });
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("CPU use over the measured window"));
        assert!(html.contains("cpu_percent per round (improvement)"));
        assert!(html.contains("Distribution of jsonl:latency_s"));
        assert!(!html.contains("Distribution of jsonl:tps"));
        assert_eq!(html.matches("Distribution of jsonl:latency_s").count(), 2); // 2 workloads
        assert!(html.contains("Block production stages, value"));
        assert!(
            html.contains(">leader_check<") && html.contains(">forged<"),
            "stage rows"
        );
        let stages = stage_tables(&meta, &execs, &j);
        assert_eq!(stages.len(), 2);
        let forged = &stages[0].rows[1];
        let text: Vec<&str> = forged.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(text[..3], ["forged", "390.00 ms", "507.00 ms"]);
        assert_eq!(text[3], "+30.0%");
        // The node's own stage timings are judged in the secondary family by default.
        assert_eq!(text[6], "regression (secondary)");
        assert_eq!(stages[0].rows[0][0].text, "leader_check");
        assert_eq!(stages[0].rows[0][1].text, "12.00 µs");
        assert!(html.contains("Improvement"));
        assert!(!html.contains("not drawn"), "a plot failed");
    }
}

#[cfg(test)]
mod change_tests;
mod disturbance;
