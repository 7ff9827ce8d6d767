//! A cluster run as `dyno compare` judges it: the compared metrics of one run
//! (`cluster:adoption_0.50_s`, `cluster:node_cpu_percent`, what its faults did...) as
//! series of points, with whether the run completed.
//!
//! `dyno compare` runs each execution of a cluster subject as a child `dyno cluster run
//! ... --compared FILE`, which writes the [`ComparedRun`] [`of`] the run (the execution
//! contract's type, in dyno-exec below compare and cluster) for the comparison to read:
//! compare and cluster stay two command crates that do not import each other, and the
//! mapping from a cluster's analysis to compared metrics lives with the analysis.

use crate::byzantine_analysis::ByzantineOutcome;
use crate::fault_analysis::FaultReport;
use crate::launch::RunOutcome;
use crate::propagation::FRACTIONS;
use crate::{ClusterSpec, NodeCommand};
use dyno_exec::{ComparedRun, Series, SeriesKind};
use dyno_model::{Direction, Metric, Unit};
use std::path::Path;

/// The adoption fractions compared (of the eight the cluster report shows): the median
/// node, most nodes, and every node.
const COMPARED_FRACTIONS: [f64; 3] = [0.50, 0.80, 1.00];

/// The compared view of `run` of `spec`, whose reference node is `dyno`'s.
pub fn of(spec: &ClusterSpec, run: &RunOutcome, dyno: &Path) -> ComparedRun {
    let slot_s = spec.slot_ms as f64 / 1000.0;
    let node_command = match &spec.command {
        NodeCommand::Reference => {
            vec![dyno.display().to_string(), "node".into(), "run".into()]
        }
        NodeCommand::Argv(argv) => argv.clone(),
    };
    let mut warnings = run.warnings.clone();
    let series = if run.complete {
        series(run, slot_s)
    } else {
        Vec::new()
    };
    if run.complete && series.iter().all(|s| !s.metric.name.contains("adoption")) {
        warnings.push(format!(
            "no block was adopted in the measured window ({} blocks seen): lengthen measure_s or check the nodes' logs",
            run.analysis.blocks.len()
        ));
    }
    ComparedRun {
        complete: run.complete,
        problems: run.problems.clone(),
        warnings,
        series,
        ..ComparedRun::new(node_command)
    }
}

fn seconds(name: &str) -> Metric {
    Metric::new(name, Unit::Seconds, Direction::LowerIsBetter)
}

/// The compared metrics of one cluster run. Per-block times are observations (the run's
/// value is their median, p50 over the blocks) at the block's slot start; the p90 is
/// nearest-rank, as the cluster report and Cardano give centiles;
/// adoption also gets its p90 over the blocks as a one-point series. CPU and RSS are the
/// mean over nodes per slot, a per-node figure as Cardano reports it, so the number of
/// metrics (and Holm's correction) does not grow with the node count.
fn series(run: &RunOutcome, slot_s: f64) -> Vec<Series> {
    let mut out = propagation_series(run);
    out.extend(resource_series(run, slot_s));
    out.extend(fault_series(run.fault_report.as_ref()));
    out
}

/// Per-block times as observations (none when no block gave one), preceded by their
/// nearest-rank p90 as a one-point gauge when `p90`.
fn observed(name: String, points: Vec<(f64, f64)>, p90: bool) -> Vec<Series> {
    let mut out = Vec::new();
    if points.is_empty() {
        return out;
    }
    if p90 {
        let values: Vec<f64> = points.iter().map(|p| p.1).collect();
        if let Some(v) =
            dyno_stats::quantile(&values, 0.90, dyno_stats::QuantileMethod::NearestRank)
        {
            out.push(Series {
                metric: seconds(&format!("{name}_p90")),
                kind: SeriesKind::Gauge,
                points: vec![(0.0, v)],
            });
        }
    }
    out.push(Series {
        metric: seconds(&name),
        kind: SeriesKind::Observations,
        points,
    });
    out
}

/// Adoption at the compared fractions, fetch times and the leader's slot start to
/// announcement, each at its block's slot start (seconds into the window).
fn propagation_series(run: &RunOutcome) -> Vec<Series> {
    let a = &run.analysis;
    let t0 = run.window_ns.start;
    let at = |ns: u64| (ns as f64 - t0 as f64) / 1e9;
    let mut out = Vec::new();
    for f in COMPARED_FRACTIONS {
        let key = format!("adoption_{f:.2}");
        let Some(i) = FRACTIONS.iter().position(|&x| x == f) else {
            continue;
        };
        if a.unavailable.contains(&key) {
            continue;
        }
        let points = a
            .blocks
            .iter()
            .filter_map(|b| Some((at(b.slot_start_ns), b.fractions[i]?)))
            .collect();
        out.extend(observed(format!("cluster:{key}_s"), points, true));
    }
    if !a.unavailable.iter().any(|k| k == "peer.fetch") {
        let points = a
            .blocks
            .iter()
            .flat_map(|b| {
                b.peers
                    .iter()
                    .filter_map(move |p| Some((at(b.slot_start_ns), p.fetch_s?)))
            })
            .collect();
        out.extend(observed("cluster:fetch_s".into(), points, false));
    }
    if !a
        .unavailable
        .iter()
        .any(|k| k == "forging.slot_start_to_announced")
    {
        let points = a
            .blocks
            .iter()
            .filter_map(|b| Some((at(b.slot_start_ns), b.forging.slot_start_to_announced_s?)))
            .collect();
        out.extend(observed(
            "cluster:slot_start_to_announced_s".into(),
            points,
            false,
        ));
    }
    out
}

/// CPU and RSS, the mean over nodes per slot (none without a slot every node sampled).
fn resource_series(run: &RunOutcome, slot_s: f64) -> Vec<Series> {
    let slots = run
        .resources
        .iter()
        .map(|r| r.cpu_percent.len().min(r.rss_bytes.len()))
        .min()
        .unwrap_or(0);
    if slots == 0 {
        return Vec::new();
    }
    let nodes = run.resources.len() as f64;
    let mean_per_slot = |pick: &dyn Fn(&crate::resources::NodeResources, usize) -> f64| {
        (0..slots)
            .map(|s| {
                (
                    s as f64 * slot_s,
                    run.resources.iter().map(|r| pick(r, s)).sum::<f64>() / nodes,
                )
            })
            .collect::<Vec<_>>()
    };
    vec![
        Series {
            metric: Metric::new(
                "cluster:node_cpu_percent",
                Unit::Percent,
                Direction::LowerIsBetter,
            ),
            // Each slot's CPU is a rate over that slot: the window's CPU time over its
            // length is their time-weighted mean (points at the slots' ends).
            kind: SeriesKind::Rate,
            points: mean_per_slot(&|r, s| r.cpu_percent[s])
                .into_iter()
                .map(|(t, v)| (t + slot_s, v))
                .collect(),
        },
        Series {
            metric: Metric::new(
                "cluster:node_rss_bytes",
                Unit::Bytes,
                Direction::LowerIsBetter,
            ),
            kind: SeriesKind::Gauge,
            points: mean_per_slot(&|r, s| r.rss_bytes[s]),
        },
    ]
}

/// What a run's faults did, when its cluster file has a schedule, so "does release B
/// recover from a partition faster than A" gets a verdict: per fault, seconds from its
/// end until the network agreed again (`cluster:fault_converged_s`) and until adoption was
/// back at its pre-fault p50 (`cluster:fault_adoption_recovered_s`); per struck node,
/// seconds back at the tip (`cluster:fault_back_at_tip_s`); observations, so the
/// execution's value is their median. Blocks some node never adopted and the deepest
/// fork are one value each. A recovery that did not happen within the run leaves no
/// value (the cluster report of the run says so).
fn fault_series(report: Option<&FaultReport>) -> Vec<Series> {
    let Some(r) = report else {
        return Vec::new();
    };
    let observed = |name: &str, values: Vec<f64>| {
        (!values.is_empty()).then(|| Series {
            metric: seconds(name),
            kind: SeriesKind::Observations,
            points: values.into_iter().map(|v| (0.0, v)).collect(),
        })
    };
    let count = |name: &str, value: f64| Series {
        metric: Metric::new(name, Unit::Count, Direction::LowerIsBetter),
        kind: SeriesKind::Gauge,
        points: vec![(0.0, value)],
    };
    let faults = &r.faults;
    [
        observed(
            "cluster:fault_converged_s",
            faults.iter().filter_map(|f| f.converged_s).collect(),
        ),
        observed(
            "cluster:fault_adoption_recovered_s",
            faults
                .iter()
                .filter_map(|f| f.adoption_recovered_s)
                .collect(),
        ),
        observed(
            "cluster:fault_back_at_tip_s",
            faults
                .iter()
                .flat_map(|f| f.nodes_recovered.iter().filter_map(|n| n.back_at_tip_s))
                .collect(),
        ),
        Some(count(
            "cluster:blocks_not_everywhere",
            r.blocks_not_everywhere as f64,
        )),
        Some(count("cluster:fork_max_depth", r.forks.max_depth as f64)),
    ]
    .into_iter()
    .flatten()
    .chain(byzantine_series(r))
    .collect()
}

/// What the honest nodes did about byzantine faults, when the schedule has any, so "does
/// release B refuse a lying leader as well as A, and at what cost" gets a verdict: honest
/// nodes that adopted a lie (`cluster:byzantine_lies_adopted`, summed over the faults:
/// none is right), honest nodes that refused it as its kind calls for
/// (`cluster:byzantine_nodes_refusing`, summed, higher is better), and adoption on 80%
/// of nodes of the blocks forged while each held (`cluster:byzantine_adoption_0.80_s`,
/// an observation per fault: the price of the lie in propagation).
fn byzantine_series(r: &FaultReport) -> Vec<Series> {
    let outcomes: Vec<(&crate::fault_analysis::FaultOutcome, &ByzantineOutcome)> = r
        .faults
        .iter()
        .filter_map(|f| f.byzantine.as_ref().map(|b| (f, b)))
        .collect();
    if outcomes.is_empty() {
        return Vec::new();
    }
    let count = |name: &str, direction, value: usize| Series {
        metric: Metric::new(name, Unit::Count, direction),
        kind: SeriesKind::Gauge,
        points: vec![(0.0, value as f64)],
    };
    let mut out = vec![
        count(
            "cluster:byzantine_lies_adopted",
            Direction::LowerIsBetter,
            outcomes.iter().map(|(_, b)| b.nodes_adopting_lies).sum(),
        ),
        count(
            "cluster:byzantine_nodes_refusing",
            Direction::HigherIsBetter,
            outcomes.iter().map(|(_, b)| b.nodes_refusing).sum(),
        ),
    ];
    let during: Vec<(f64, f64)> = outcomes
        .iter()
        .filter_map(|(f, b)| Some((0.0, f.pre_fault_p50_s? + b.delay_s?)))
        .collect();
    if !during.is_empty() {
        out.push(Series {
            metric: seconds("cluster:byzantine_adoption_0.80_s"),
            kind: SeriesKind::Observations,
            points: during,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault_analysis::{FaultOutcome, Forks, NodeRecovery};
    use crate::faults::FaultRecord;

    fn outcome(converged: Option<f64>, back: &[Option<f64>]) -> FaultOutcome {
        FaultOutcome {
            record: FaultRecord {
                index: 0,
                kind: "restart".into(),
                what: "restart n1".into(),
                nodes: vec!["n1".into()],
                at_slot: 10,
                end_slot: Some(14),
                start_ns: Some(1),
                end_ns: Some(2),
                flavour: None,
            },
            nodes_recovered: back
                .iter()
                .map(|&b| NodeRecovery {
                    node: "n1".into(),
                    back_at_tip_s: b,
                    synced_blocks: None,
                    sync_rounds: None,
                })
                .collect(),
            converged_s: converged,
            pre_fault_p50_s: Some(0.1),
            adoption_recovered_s: converged.map(|c| c * 2.0),
            blocks_during: 4,
            blocks_not_everywhere: 1,
            byzantine: None,
        }
    }

    #[test]
    fn faults_become_compared_metrics_and_a_run_without_them_adds_none() {
        assert!(fault_series(None).is_empty());
        let report = FaultReport {
            faults: vec![
                outcome(Some(0.5), &[Some(0.7)]),
                outcome(None, &[None, Some(1.5)]),
            ],
            forks: Forks {
                contested_heights: 3,
                reorgs: Vec::new(),
                max_depth: 9,
                resolved: true,
            },
            blocks_not_everywhere: 2,
            adoption_during_faults: None,
            adoption_outside_faults: None,
            windows: Vec::new(),
        };
        let s = fault_series(Some(&report));
        let get = |n: &str| s.iter().find(|x| x.metric.name == n).unwrap();
        let values = |n: &str| get(n).points.iter().map(|p| p.1).collect::<Vec<_>>();
        // A recovery that did not happen leaves no value rather than a zero.
        assert_eq!(values("cluster:fault_converged_s"), [0.5]);
        assert_eq!(values("cluster:fault_adoption_recovered_s"), [1.0]);
        assert_eq!(values("cluster:fault_back_at_tip_s"), [0.7, 1.5]);
        assert_eq!(values("cluster:blocks_not_everywhere"), [2.0]);
        assert_eq!(values("cluster:fork_max_depth"), [9.0]);
        assert_eq!(
            get("cluster:fault_back_at_tip_s").kind,
            SeriesKind::Observations
        );
        // dyno's own measurements of the network, named so that dyno compare judges them
        // in its default primary family (`cluster:`; its family tests say so).
        assert!(s.iter().all(|x| x.metric.name.starts_with("cluster:")));
    }
}
