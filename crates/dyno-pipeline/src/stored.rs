//! A stored `pipeline bench` run's answer for its full report (`dyno results report`,
//! and `dyno serve`'s `/runs/ID/report`): the diagnosis the bench kept in the run's
//! settings (the bottleneck, why, the notes and each tile kind's busy and backpressured
//! shares), read back into dyno-pipeline's own [`Diagnosis`].

use crate::diagnosis::Diagnosis;
use dyno_report::{Align, Cell, Section, Table};
use dyno_store::StoredRun;

/// The "Bottleneck" section of a stored bench run's report, marked as its answer (first
/// after the header); `None` for runs of other commands. A run stored before the bench
/// kept its diagnosis gets a section saying so.
pub fn stored_diagnosis_section(run: &StoredRun) -> Option<Section> {
    if run.info.command != "pipeline bench" {
        return None;
    }
    let stored = run.info.settings.get("diagnosis").cloned();
    let Some(d) = stored.and_then(|v| serde_json::from_value::<Diagnosis>(v).ok()) else {
        return Some(Section::new("Bottleneck").answer().note(
            "This run was stored before dyno kept the bench's diagnosis; run the bench again to see what limits it.",
        ));
    };
    Some(section(&d))
}

fn section(d: &Diagnosis) -> Section {
    let mut s = Section::new(format!("Bottleneck: {}", d.bottleneck))
        .answer()
        .paragraph(d.summary.clone());
    for n in &d.notes {
        s = s.paragraph(format!("Note: {n}"));
    }
    let mut t = Table::new("Time shares of each tile kind over the measured window")
        .column("Tile kind", Align::Left)
        .column("Tiles", Align::Right)
        .column("Busy", Align::Right)
        .column("Backpressured", Align::Right);
    for k in &d.shares {
        let kind = Cell::new(k.kind.clone());
        t.push_row([
            if k.kind == d.bottleneck {
                kind.emphasis()
            } else {
                kind
            },
            Cell::new(k.tiles.to_string()),
            Cell::new(format!("{:.1} %", k.busy * 100.0)),
            Cell::new(format!("{:.1} %", k.backpressured * 100.0)),
        ]);
    }
    s.table(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::{Host, RunInfo, RunStatus, Subject, SubjectKind};

    fn run(command: &str, settings: serde_json::Value) -> StoredRun {
        StoredRun {
            id: 7,
            info: RunInfo {
                command: command.into(),
                subject: Subject::new(SubjectKind::Layout, "leader:bench"),
                host: Host::default(),
                started_at: 0.0,
                command_line: vec![],
                tool_version: "test".into(),
                settings,
            },
            status: RunStatus::Complete,
            finished_at: None,
            metrics: vec![],
            samples: vec![],
        }
    }

    #[test]
    fn the_stored_diagnosis_is_the_reports_answer() {
        let d = Diagnosis {
            bottleneck: "verify".into(),
            summary: "verify tiles lose frags at ingress".into(),
            notes: vec!["2 tiles share a core".into()],
            shares: vec![crate::diagnosis::KindShare {
                kind: "verify".into(),
                tiles: 2,
                busy: 0.97,
                backpressured: 0.0,
            }],
        };
        let settings = serde_json::json!({ "diagnosis": d });
        let s = stored_diagnosis_section(&run("pipeline bench", settings)).unwrap();
        assert!(s.answer);
        let html = dyno_report::section_html(&s);
        assert!(html.starts_with("<section id=\"answer\""), "{html}");
        for text in [
            "Bottleneck: verify",
            "lose frags at ingress",
            "Note: 2 tiles share a core",
            "97.0 %",
        ] {
            assert!(html.contains(text), "{text}: {html}");
        }
        let old = stored_diagnosis_section(&run("pipeline bench", serde_json::json!({})));
        assert!(dyno_report::section_html(&old.unwrap()).contains("stored before"));
        assert!(stored_diagnosis_section(&run("machine", serde_json::json!({}))).is_none());
    }
}
