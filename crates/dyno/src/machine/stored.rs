//! The requirement verdict of a machine run read back from the store, for
//! `dyno results report`: the same rule and the same medians as the terminal showed.
//!
//! The judging is dyno-hw's ([`dyno_hw::judge_stored`]: the minimums the run recorded, so
//! a report made later judges against what the run saw); this module renders it.

use dyno_hw::judge_stored;
use dyno_model::format_value;
use dyno_report::{Align, Cell, Section, Table, Verdict as Badge};
use dyno_store::StoredRun;

/// The "Requirements" section of a machine run's report; `None` for other commands.
pub fn verdict_section(run: &StoredRun) -> Option<Section> {
    if run.info.command != "machine" {
        return None;
    }
    let heading = format!("Requirements: run {}", run.id);
    let metrics: Vec<&str> = run.metrics.iter().map(|m| m.name.as_str()).collect();
    let samples: Vec<(&str, f64)> = run
        .samples
        .iter()
        .map(|s| (s.metric.as_str(), s.value))
        .collect();
    let Some(judged) = judge_stored(&run.info.settings, &metrics, &samples) else {
        return Some(Section::new(heading).note(
            "This run was judged against a requirements file whose minimums it did not record; no verdict can be rebuilt.",
        ));
    };
    let (set, v, parallel_cores) = (&judged.requirements, &judged.verdict, judged.parallel_cores);
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
