//! The HTML report's table of what the rest of the machine used, round by round: the
//! terminal's `disturbance:` line ([`super::disturbance_line`]) as a row per round, with
//! the busiest other process, so a burst is seen where the verdicts are read.

use dyno_exec::{Disturbance, Execution, Outcome};
use dyno_report::{Align, Cell, Table};
use std::collections::BTreeMap;

/// Per round the execution whose window other work disturbed most, with how many of the
/// round's executions were run again for it; `None` when no execution measured it.
pub fn disturbance_table(executions: &[Execution]) -> Option<Table> {
    let mut by_round: BTreeMap<u32, (&Disturbance, &Execution, usize)> = BTreeMap::new();
    for e in executions {
        let Some(d) = &e.disturbance else { continue };
        let rerun = usize::from(matches!(e.outcome, Outcome::Disturbed { .. }));
        let worst = by_round.entry(e.round).or_insert((d, e, 0));
        worst.2 += rerun;
        if d.other_cpu_percent > worst.0.other_cpu_percent {
            (worst.0, worst.1) = (d, e);
        }
    }
    if by_round.is_empty() {
        return None;
    }
    let mut t = Table::new("Other work on the machine, by round")
        .column("round", Align::Right)
        .column(
            "other work, % of one core (most of its windows)",
            Align::Right,
        )
        .column("busiest other process", Align::Left)
        .column("its CPU, % of one core", Align::Right)
        .column("in the window of", Align::Left)
        .column("disturbed, run again", Align::Right);
    for (round, (d, e, rerun)) in by_round {
        let (who, share) = match &d.busiest {
            Some((name, pid, share)) => (format!("{name} (pid {pid})"), format!("{share:.1}")),
            None => ("none named".to_string(), String::new()),
        };
        t.push_row(vec![
            Cell::new((round + 1).to_string()),
            Cell::new(format!("{:.1}", d.other_cpu_percent)),
            Cell::new(who),
            Cell::new(share),
            Cell::new(&e.subject),
            Cell::new(rerun.to_string()),
        ]);
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_html_report_shows_each_round_s_other_work_and_its_busiest_process() {
        let execs = crate::report::tests::hog_in_round_two();
        let meta = crate::comparison::ComparisonMeta::of(
            &["a", "b"],
            &crate::verdict::tests::workloads(),
            3,
        );
        let workloads = crate::verdict::tests::workloads();
        let settings = dyno_stats::ComparisonSettings {
            resamples: 200,
            ..Default::default()
        };
        let judgement = crate::verdict::judge(&execs, &meta.subjects, &settings);
        let html = super::super::html(&super::super::ReportInput {
            meta: &meta,
            workloads: &workloads,
            host: &dyno_model::Host::default(),
            executions: &execs,
            judgement: &judgement,
            parameters: Vec::new(),
        });
        assert!(
            html.contains("Other work on the machine, by round"),
            "no table"
        );
        // Round 2's row: the hog's 45% of a core, named with its pid.
        let row = html
            .split("<tr>")
            .find(|r| r.contains("hog (pid 1)"))
            .unwrap_or_else(|| panic!("no row names the hog"));
        assert!(row.contains(">2<") && row.contains(">45.0<"), "{row}");
        // Without the measurement (a synthetic run with no hog records none), no table.
        let quiet: Vec<Execution> = execs
            .iter()
            .cloned()
            .map(|mut e| {
                e.disturbance = None;
                e
            })
            .collect();
        assert!(disturbance_table(&quiet).is_none());
    }
}
