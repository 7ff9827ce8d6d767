//! What a run's faults did, as sentences, a table and an adoption-over-time plot with
//! the fault windows shaded.

use super::{ms, ClusterReport};
use crate::byzantine_analysis::ByzantineOutcome;
use crate::fault_analysis::{FaultOutcome, FaultReport, FOLLOWED_FRACTION};
use dyno_model::{Direction, Metric, Unit};
use dyno_report::plot::TimeSeriesPlot;
use dyno_report::{Align, Table};

fn secs(v: Option<f64>, never: &str) -> String {
    v.map_or(never.to_string(), |s| {
        if s >= 10.0 {
            format!("{s:.1} s")
        } else {
            ms(s)
        }
    })
}

/// One sentence per fault, then the forks and adoption during against outside faults.
pub fn fault_lines(r: &FaultReport) -> Vec<String> {
    let mut out: Vec<String> = r.faults.iter().map(one_line).collect();
    let f = &r.forks;
    out.push(match (f.contested_heights, f.resolved) {
        (0, _) => "no fork: every height held one block on every node".to_string(),
        (n, resolved) => format!(
            "forks at {n} height(s); {} switch(es) of chain, the deepest abandoning {} block(s); {}",
            f.reorgs.len(),
            f.max_depth,
            if resolved {
                "resolved: every node up adopted one same block forged after the last fault"
            } else {
                "NOT resolved by the end of the run"
            }
        ),
    });
    if let (Some(d), Some(o)) = (&r.adoption_during_faults, &r.adoption_outside_faults) {
        out.push(format!(
            "adopted on 80% of nodes: p50 {} during faults ({} blocks) against {} outside them ({} blocks); {} block(s) of the window never reached every node",
            ms(d.p50_s),
            d.count,
            ms(o.p50_s),
            o.count,
            r.blocks_not_everywhere
        ));
    }
    out
}

fn one_line(f: &FaultOutcome) -> String {
    let mut parts = vec![f.record.what.clone()];
    if f.record.start_ns.is_none() {
        parts.push("never started (the run ended first)".into());
        return parts.join(": ");
    }
    for n in &f.nodes_recovered {
        let sync = match (n.synced_blocks, n.sync_rounds) {
            (Some(b), Some(r)) => format!(" (synced {b} blocks in {r} range request(s))"),
            _ => String::new(),
        };
        parts.push(match n.back_at_tip_s {
            Some(s) => format!(
                "{} back at the tip {} after it ended{sync}",
                n.node,
                secs(Some(s), "")
            ),
            None => format!("{} not back at the tip by the end of the run{sync}", n.node),
        });
    }
    if let Some(b) = &f.byzantine {
        parts.extend(byzantine_parts(f, b));
    }
    if f.record.end_slot.is_some() {
        parts.push(match f.converged_s {
            Some(s) => format!(
                "every node agreed again {} after it ended",
                secs(Some(s), "")
            ),
            None => "the nodes did not agree again within the run".into(),
        });
    }
    if let (Some(p50), Some(s)) = (f.pre_fault_p50_s, f.adoption_recovered_s) {
        parts.push(format!(
            "adoption back to its pre-fault p50 ({}) {} after it ended",
            ms(p50),
            secs(Some(s), "")
        ));
    }
    parts.join("; ")
}

/// What a byzantine fault's liar did and what the honest nodes did about it.
fn byzantine_parts(f: &FaultOutcome, b: &ByzantineOutcome) -> Vec<String> {
    let liar = f.record.nodes.join(",");
    let kind = f.record.kind.as_str();
    if b.lies == 0 {
        return vec![format!(
            "{liar} told no lie while it held (it led no slot then)"
        )];
    }
    let reactions = b
        .reactions
        .iter()
        .map(|(k, n)| format!("{k} x {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let reactions = if reactions.is_empty() {
        "nothing logged".to_string()
    } else {
        reactions
    };
    let (told, did) = match kind {
        "equivocate" => (
            format!("{liar} sent two different blocks for {} slot(s)", b.lies),
            "recorded the equivocation with both signed headers as evidence",
        ),
        "invalid_block" => (
            format!(
                "{liar} announced {} invalid block(s) ({})",
                b.lies,
                f.record.flavour.as_deref().unwrap_or("?")
            ),
            "refused them as invalid",
        ),
        "withhold" => (
            format!(
                "{liar} announced {} block(s) it never served while the fault lasted",
                b.lies
            ),
            "gave up fetching them",
        ),
        _ => (
            format!("{liar} flooded its peers with malformed and oversized frames"),
            "cut its link or refused its frames",
        ),
    };
    let mut out = vec![
        told,
        format!(
            "{} of {} honest nodes {did} ({}: {reactions})",
            b.nodes_refusing, b.honest_nodes, b.expected
        ),
    ];
    if kind != "equivocate" && kind != "garbage" {
        out.push(match b.nodes_adopting_lies {
            0 => "no honest node adopted one".to_string(),
            n => format!("{n} honest node(s) ADOPTED one"),
        });
    }
    if let Some(d) = b.delay_s {
        out.push(format!(
            "blocks forged meanwhile reached 80% of nodes {} {} than before it (p50)",
            ms(d.abs()),
            if d >= 0.0 { "later" } else { "sooner" }
        ));
    }
    out
}

/// The faults table.
pub fn fault_table(r: &FaultReport) -> Table {
    let mut t = Table::new("Faults (times after each fault ended)")
        .column("fault", Align::Left)
        .column("nodes back at tip", Align::Left)
        .column("all agree", Align::Right)
        .column("adoption back", Align::Right)
        .column("blocks during", Align::Right)
        .column("not everywhere", Align::Right);
    for f in &r.faults {
        let back: Vec<String> = f
            .nodes_recovered
            .iter()
            .map(|n| format!("{} {}", n.node, secs(n.back_at_tip_s, "never")))
            .collect();
        t.push_row([
            f.record.what.clone(),
            if back.is_empty() {
                "-".into()
            } else {
                back.join(", ")
            },
            if f.record.end_slot.is_some() {
                secs(f.converged_s, "never")
            } else {
                "-".into()
            },
            secs(f.adoption_recovered_s, "-"),
            f.blocks_during.to_string(),
            f.blocks_not_everywhere.to_string(),
        ]);
    }
    t
}

/// Each block's adoption at 80% of nodes over its slot's time since the first slot
/// analysed, the fault windows shaded; `None` when no block reached 80%.
pub fn adoption_plot(report: &ClusterReport, faults: &FaultReport, slot_s: f64) -> Option<String> {
    let f80 = report
        .fractions
        .iter()
        .position(|f| *f == FOLLOWED_FRACTION)?;
    let first = report.per_block.iter().map(|b| b.slot).min()?;
    let points: Vec<(f64, f64)> = report
        .per_block
        .iter()
        .filter_map(|b| b.adoption_s[f80].map(|a| ((b.slot - first) as f64 * slot_s, a)))
        .collect();
    if points.is_empty() {
        return None;
    }
    let metric = Metric::new("adoption at 80%", Unit::Seconds, Direction::LowerIsBetter);
    let mut plot = TimeSeriesPlot::new("Adoption on 80% of nodes, block by block", metric)
        .series("per block", points);
    for (f, (a, b)) in faults.faults.iter().zip(&faults.windows) {
        let to_s = |s: u64| (s as f64 - first as f64) * slot_s;
        plot = plot.window(f.record.kind.clone(), to_s(*a), to_s(*b));
    }
    plot.render_svg().ok()
}
