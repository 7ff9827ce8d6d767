//! The requirement verdict of a machine run read back from the store, for
//! `dyno results report`: the same rule and the same medians as the terminal showed.
//!
//! A run records the minimums it was judged against (`requirement_minimums` in its
//! settings), so a report made later, on another machine or after the requirements file
//! changed, judges against what the run saw. Runs from before that field existed fall
//! back to the built-in set named in `requirements`, when it is one.

use dyno_hw::{evaluate, Measurement, MetricId, Requirement, RequirementSet};
use dyno_model::format_value;
use dyno_report::{Align, Cell, Section, Table, Verdict as Badge};
use dyno_store::StoredRun;
use serde_json::Value;
use std::time::Duration;

/// The settings entry that lists a run's minimums.
pub const MINIMUMS_KEY: &str = "requirement_minimums";

/// The requirement set as recorded in a run's settings.
pub fn minimums_json(set: &RequirementSet) -> Value {
    set.requirements
        .iter()
        .map(|r| {
            serde_json::json!({
                "metric": r.metric.name(),
                "minimum": r.minimum,
                "num_cores": r.num_cores,
                "validator_only": r.validator_only,
            })
        })
        .collect()
}

/// The set a stored run was judged against, if it can be known.
fn stored_requirements(settings: &Value) -> Option<RequirementSet> {
    let name = settings
        .get("requirements")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    let Some(list) = settings.get(MINIMUMS_KEY).and_then(Value::as_array) else {
        return RequirementSet::builtin(&name).ok();
    };
    let requirements = list
        .iter()
        .map(|e| {
            Some(Requirement {
                metric: MetricId::parse(e.get("metric")?.as_str()?)?,
                minimum: e.get("minimum")?.as_f64()?,
                num_cores: e
                    .get("num_cores")
                    .and_then(Value::as_u64)
                    .map(|n| n as usize),
                validator_only: e
                    .get("validator_only")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(RequirementSet { name, requirements })
}

/// The "Requirements" section of a machine run's report; `None` for other commands.
pub fn verdict_section(run: &StoredRun) -> Option<Section> {
    if run.info.command != "machine" {
        return None;
    }
    let heading = format!("Requirements: run {}", run.id);
    let settings = &run.info.settings;
    let Some(set) = stored_requirements(settings) else {
        return Some(Section::new(heading).note(
            "This run was judged against a requirements file whose minimums it did not record; no verdict can be rebuilt.",
        ));
    };
    let tolerance = settings
        .get("tolerance_percent")
        .and_then(Value::as_f64)
        .unwrap_or(10.0);
    let parallel_cores = settings
        .get("parallel_cores")
        .and_then(Value::as_u64)
        .unwrap_or(8) as usize;
    let measured: Vec<(MetricId, Vec<Measurement>)> = run
        .metrics
        .iter()
        .filter_map(|m| MetricId::parse(&m.name))
        .map(|id| {
            let scores = run
                .samples
                .iter()
                .filter(|s| s.metric == id.name())
                .map(|s| Measurement {
                    score: s.value,
                    // Only the scores are judged; the loop counts stay in the samples' labels.
                    iterations: 0,
                    elapsed: Duration::ZERO,
                    threads: 1,
                })
                .collect();
            (id, scores)
        })
        .collect();
    let v = evaluate(measured, &set, tolerance);
    let mut table = Table::new("Verdict")
        .column("Category", Align::Left)
        .column("Function", Align::Left)
        .column("Score (median)", Align::Right)
        .column("Minimum", Align::Right)
        .column("Result", Align::Left);
    for m in &v.results {
        let unit = m.id.unit();
        table.push_row([
            Cell::new(m.id.category()),
            Cell::new(m.id.display(parallel_cores)),
            Cell::new(format_value(m.median, unit)),
            Cell::new(
                m.requirement
                    .as_ref()
                    .map(|q| format_value(q.minimum, unit))
                    .unwrap_or_else(|| "-".into()),
            ),
            Cell::new(match m.judgement {
                None => "no minimum".to_string(),
                Some(j) if j.bad_result => format!("Bad result ({:.1} %)", j.relative * 100.0),
                Some(j) if j.passed => format!("Pass ({:.1} %)", j.relative * 100.0),
                Some(j) => format!("Fail ({:.1} %)", j.relative * 100.0),
            }),
        ]);
    }
    let summary = format!(
        "Against {}: from {} benchmarks in total, {} passed and {} failed ({:.0}% fault tolerance).",
        set.name, v.judged, v.passed, v.failed, v.tolerance
    );
    let (badge, sentence) = if v.meets_requirements() {
        (Badge::Pass, "The hardware meets the requirements.")
    } else {
        (Badge::Fail, "The hardware fails to meet the requirements.")
    };
    let mut section = Section::new(heading)
        .verdict(badge, format!("{sentence} {summary}"))
        .table(table);
    if run.status != dyno_model::RunStatus::Complete {
        section = section.note(format!(
            "The run is {}: the verdict covers only the metrics it measured.",
            run.status.as_str()
        ));
    }
    Some(section)
}
