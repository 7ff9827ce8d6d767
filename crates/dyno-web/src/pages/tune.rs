//! A `tune` run is one build variant of a study; its page shows the whole study from the
//! store: the winning recipe first (the `[profile]` section and flags of the best variant
//! on the Pareto set: the study's answer), then the race (rounds each variant ran: a race
//! stops measuring a variant once it is beaten) and the Pareto set on the medians of the
//! benchmark metrics.
//! `dyno tune report STUDY` gives the statistics behind each elimination.

use super::values;
use crate::markup::{answer, esc, link, HtmlTable};
use crate::state::PageError;
use dyno_model::{format_value, Direction, Metric};
use dyno_stats::Better;
use dyno_store::{RunFilter, Store, StoredRun};

/// What a failed benchmark job is stored as (dyno-tune's record).
const FAILED_METRIC: &str = "benchmark_failed";

/// One variant of the study.
struct Contestant {
    run: StoredRun,
    rounds: usize,
    medians: Vec<Option<f64>>,
}

/// The run page's answer (the winning recipe) and the rest of its section (the race).
pub(crate) fn section(store: &Store, run: &StoredRun) -> Result<(String, String), PageError> {
    let Some(study) = run.info.subject.attributes.get("study").cloned() else {
        let none = "<p class=\"note\">This tune run names no study.</p>\n";
        return Ok((answer("", "The winning recipe", none), String::new()));
    };
    let filter = RunFilter {
        command: Some("tune".into()),
        ..RunFilter::default()
    };
    let mut runs = Vec::new();
    for s in store.list_runs(&filter)? {
        let r = store.run(s.id)?;
        if r.info.subject.attributes.get("study") == Some(&study) {
            runs.push(r);
        }
    }
    runs.sort_by_key(|r| r.id);
    // The benchmark metrics, in the order the first variant registered them.
    let mut metrics: Vec<Metric> = Vec::new();
    for r in &runs {
        for m in r.metrics.iter().filter(|m| m.name != FAILED_METRIC) {
            if !metrics.iter().any(|k| k.name == m.name) {
                metrics.push(m.clone());
            }
        }
    }
    let contestants: Vec<Contestant> = runs
        .into_iter()
        .map(|r| {
            let mut rounds: Vec<u32> = r.samples.iter().map(|s| s.repetition).collect();
            rounds.sort_unstable();
            rounds.dedup();
            let medians = metrics
                .iter()
                .map(|m| dyno_stats::median(&values(&r, &m.name)))
                .collect();
            Contestant {
                rounds: rounds.len(),
                medians,
                run: r,
            }
        })
        .collect();
    let most = contestants.iter().map(|c| c.rounds).max().unwrap_or(0);
    let pareto = pareto(&contestants, &metrics);
    let winner = answer(
        "pass",
        "The winning recipe",
        &recipe(&contestants, &metrics, &pareto, most),
    );
    let mut out = format!(
        "<p class=\"hint\">Study <code>{}</code> ({}): {} variants, {} rounds at most. \
         A variant measured for fewer rounds than the others was eliminated by the race \
         (beaten with significance, or hopeless); <code>dyno tune report</code> gives each \
         elimination's statistics.</p>\n",
        esc(run.info.settings["study"].as_str().unwrap_or(&study)),
        esc(run.info.settings["mode"].as_str().unwrap_or("racing")),
        contestants.len(),
        most
    );
    out.push_str("<h2>The race</h2>\n");
    out.push_str(&race(&contestants, &metrics, &pareto, most, run.id));
    Ok((winner, out))
}

fn better(d: Direction) -> Better {
    match d {
        Direction::HigherIsBetter => Better::Higher,
        Direction::LowerIsBetter => Better::Lower,
    }
}

/// The variants (indexes) on the Pareto front of the medians, among those with every
/// median.
fn pareto(contestants: &[Contestant], metrics: &[Metric]) -> Vec<usize> {
    let complete: Vec<usize> = (0..contestants.len())
        .filter(|&i| contestants[i].medians.iter().all(Option::is_some))
        .collect();
    let points: Vec<Vec<f64>> = complete
        .iter()
        .map(|&i| contestants[i].medians.iter().flatten().copied().collect())
        .collect();
    let dirs: Vec<Better> = metrics.iter().map(|m| better(m.direction)).collect();
    dyno_stats::pareto_front(&points, &dirs)
        .map(|front| front.into_iter().map(|k| complete[k]).collect())
        .unwrap_or_default()
}

fn race(
    contestants: &[Contestant],
    metrics: &[Metric],
    pareto: &[usize],
    most: usize,
    this: i64,
) -> String {
    let headers: Vec<String> = metrics
        .iter()
        .map(|m| {
            let arrow = if m.direction == Direction::HigherIsBetter {
                "↑"
            } else {
                "↓"
            };
            format!("{} {arrow}", m.name)
        })
        .collect();
    let mut head: Vec<(&str, bool)> = vec![
        ("Variant", false),
        ("Rounds", true),
        ("In the race", false),
        ("Pareto set", false),
    ];
    head.extend(headers.iter().map(|h| (h.as_str(), true)));
    let mut t = HtmlTable::new("race", &head);
    for (i, c) in contestants.iter().enumerate() {
        let label = if c.run.id == this {
            format!(
                "<strong>{}</strong> (this run)",
                esc(&c.run.info.subject.name)
            )
        } else {
            link(&format!("/runs/{}", c.run.id), &c.run.info.subject.name)
        };
        let failed = values(&c.run, FAILED_METRIC).len();
        let status = if c.rounds == most {
            "to the end".to_string()
        } else {
            format!("stopped after {} of {most}", c.rounds)
        } + &if failed > 0 {
            format!(", {failed} failed job(s)")
        } else {
            String::new()
        };
        let mut row = vec![
            label,
            c.rounds.to_string(),
            esc(&status),
            if pareto.contains(&i) {
                "<span class=\"status-complete\">yes</span>".into()
            } else {
                String::new()
            },
        ];
        row.extend(
            c.medians
                .iter()
                .zip(metrics)
                .map(|(m, metric)| m.map_or("-".into(), |v| esc(&format_value(v, metric.unit)))),
        );
        t.row(row);
    }
    t.render()
}

/// The winner: among the variants that ran to the end and sit on the Pareto set, the
/// best median on the first benchmark metric.
fn recipe(contestants: &[Contestant], metrics: &[Metric], pareto: &[usize], most: usize) -> String {
    let Some(first) = metrics.first() else {
        return "<p class=\"note\">No benchmark result is stored yet.</p>\n".into();
    };
    let dir = better(first.direction);
    let winner = pareto
        .iter()
        .copied()
        .filter(|&i| contestants[i].rounds == most)
        .filter_map(|i| contestants[i].medians[0].map(|v| (i, v)))
        .reduce(|a, b| if dir.is_better(b.1, a.1) { b } else { a });
    let Some((w, v)) = winner else {
        return "<p class=\"note\">No variant that ran every round is on the Pareto set.</p>\n"
            .into();
    };
    let c = &contestants[w];
    let attrs = &c.run.info.subject.attributes;
    let mut out = format!(
        "<p><strong>{}</strong>: on the Pareto set, ran every round, and the best median \
         {} ({}) of those.</p>\n",
        link(&format!("/runs/{}", c.run.id), &c.run.info.subject.name),
        esc(&first.name),
        esc(&format_value(v, first.unit))
    );
    if let Some(profile) = attrs.get("profile").filter(|p| !p.is_empty()) {
        out.push_str(&format!("<pre class=\"recipe\">{}</pre>\n", esc(profile)));
    }
    let mut t = HtmlTable::new("recipe", &[("Build", false), ("Value", false)]);
    for key in [
        "rustflags",
        "toolchain",
        "rustc",
        "pgo",
        "size",
        "build_time_s",
    ] {
        if let Some(v) = attrs.get(key).filter(|v| !v.is_empty()) {
            t.row(vec![esc(key), esc(v)]);
        }
    }
    if !t.is_empty() {
        out.push_str(&t.render());
    }
    out
}
