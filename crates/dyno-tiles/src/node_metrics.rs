//! The single-process node's own figures (`dyno node --workload`, `dyno pipeline bench
//! --metrics-listen`) for its metrics endpoint: what the node
//! log records (achieved TPS, generation-to-PoH latency, block stages), as Prometheus
//! families next to the tiles' counters, so a scraper (`dyno compare`, Prometheus) gets
//! them without the log.
//!
//! Fed by the bench's progress events (one per second and one per block), so the tiles do
//! no extra work for it. Families (declared in [`crate::node_families`]):
//!
//! | family | type | value |
//! |---|---|---|
//! | `dyno_node_tps` | gauge | transactions landed over the last second |
//! | `dyno_node_latency_seconds{quantile}` | gauge | p50/p90/p99 of the last second's transactions |
//! | `dyno_node_transactions_total` | counter | transactions recorded into blocks |
//! | `dyno_node_blocks_total` | counter | blocks produced and reported |
//! | `dyno_node_block_stage_seconds_total{stage}` | counter | time spent in each stage, summed over blocks |
//! | `dyno_node_block_stage_seconds_last{stage}` | gauge | the last block's time in each stage |
//!
//! Stage names are those of the node log (`leader_check`, `ticking`, `snapshot`, `forged`,
//! `adopted`); a stage a block did not report (`leader_check` when pack never saw the slot,
//! `adopted` without a store) adds nothing to its counter and leaves its last value alone.

use std::sync::Mutex;

use dyno_obs::TextWriter;

use crate::node_families::{
    BLOCKS_TOTAL, BLOCK_STAGE_SECONDS_LAST, BLOCK_STAGE_SECONDS_TOTAL, LATENCY_SECONDS, STAGES,
    TPS, TRANSACTIONS_TOTAL,
};
use crate::progress::Progress;

#[derive(Debug, Default)]
struct State {
    /// Set by the first second of the window.
    second: Option<SecondFigures>,
    transactions: u64,
    blocks: u64,
    stage_total_ns: [u64; 5],
    stage_last_ns: [Option<u64>; 5],
}

#[derive(Debug, Clone, Copy)]
struct SecondFigures {
    tps: f64,
    /// p50, p90, p99 in ns; none when no transaction was recorded in that second.
    latency: Option<[u64; 3]>,
}

/// The node's figures as the endpoint renders them; shared by the bench loop (writer)
/// and the endpoint's thread (reader).
#[derive(Debug, Default)]
pub struct NodeMetrics {
    state: Mutex<State>,
}

impl NodeMetrics {
    /// Takes in one progress event; events other than seconds and blocks are ignored.
    pub fn observe(&self, p: &Progress) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match p {
            Progress::Second { tps, latency, .. } => {
                s.second = Some(SecondFigures {
                    tps: *tps,
                    latency: (latency.count > 0).then_some([latency.p50, latency.p90, latency.p99]),
                });
            }
            Progress::Block { block: b, .. } => {
                s.blocks += 1;
                s.transactions += b.txs;
                let stages = [
                    b.leader_check_ns,
                    Some(b.ticking_ns),
                    Some(b.snapshot_ns),
                    Some(b.forged_ns),
                    b.adopted_ns,
                ];
                for (i, ns) in stages.into_iter().enumerate() {
                    if let Some(ns) = ns {
                        s.stage_total_ns[i] += ns;
                        s.stage_last_ns[i] = Some(ns);
                    }
                }
            }
            _ => {}
        }
    }

    /// The families in the Prometheus text format (0.0.4), each with HELP and TYPE; a
    /// family without a sample yet (no second, no stage reported) is left out.
    pub fn render(&self) -> String {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let secs = |ns: u64| ns as f64 / 1e9;
        let mut w = TextWriter::new();
        if let Some(second) = s.second {
            w.single(&TPS, second.tps);
            if let Some(q) = second.latency {
                let mut f = w.family(&LATENCY_SECONDS);
                for (quantile, ns) in ["0.5", "0.9", "0.99"].into_iter().zip(q) {
                    f.sample(&[quantile], secs(ns));
                }
            }
        }
        w.single(&TRANSACTIONS_TOTAL, s.transactions);
        w.single(&BLOCKS_TOTAL, s.blocks);
        let mut f = w.family(&BLOCK_STAGE_SECONDS_TOTAL);
        for (stage, ns) in STAGES.into_iter().zip(s.stage_total_ns) {
            f.sample(&[stage], secs(ns));
        }
        if s.stage_last_ns.iter().any(Option::is_some) {
            let mut f = w.family(&BLOCK_STAGE_SECONDS_LAST);
            for (stage, ns) in STAGES.into_iter().zip(s.stage_last_ns) {
                if let Some(ns) = ns {
                    f.sample(&[stage], secs(ns));
                }
            }
        }
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Latency;
    use crate::telemetry::BlockRecord;

    fn block(slot: u64, leader_check: Option<u64>, adopted: Option<u64>) -> Progress {
        Progress::Block {
            t: slot as f64,
            block: BlockRecord {
                slot,
                start_ns: 0,
                end_ns: 400_000_000,
                txs: 100 * slot,
                microblocks: 3,
                leader_check_ns: leader_check,
                ticking_ns: 300_000_000,
                snapshot_ns: 20_000_000,
                forged_ns: 150_000_000,
                adopted_ns: adopted,
            },
        }
    }

    /// `name{labels}` -> value, from the sample lines.
    fn values(text: &str) -> std::collections::BTreeMap<String, f64> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap();
                (k.to_string(), v.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn before_any_event_only_the_counters_are_rendered_at_zero() {
        let v = values(&NodeMetrics::default().render());
        assert_eq!(v["dyno_node_blocks_total"], 0.0);
        assert_eq!(
            v["dyno_node_block_stage_seconds_total{stage=\"ticking\"}"],
            0.0
        );
        assert!(!v.contains_key("dyno_node_tps"));
        assert!(!v.keys().any(|k| k.starts_with("dyno_node_latency_seconds")));
        assert!(!v
            .keys()
            .any(|k| k.starts_with("dyno_node_block_stage_seconds_last")));
    }

    #[test]
    fn blocks_add_up_and_absent_stages_add_nothing() {
        let m = NodeMetrics::default();
        m.observe(&block(1, Some(1_000_000), Some(5_000_000)));
        m.observe(&block(2, None, None));
        m.observe(&Progress::Draining);
        let v = values(&m.render());
        assert_eq!(v["dyno_node_blocks_total"], 2.0);
        assert_eq!(v["dyno_node_transactions_total"], 300.0);
        let total = |s: &str| v[&format!("dyno_node_block_stage_seconds_total{{stage=\"{s}\"}}")];
        assert_eq!(total("ticking"), 0.6);
        assert_eq!(total("forged"), 0.3);
        assert_eq!(total("leader_check"), 0.001);
        assert_eq!(total("adopted"), 0.005);
        // The last block had no leader check or adoption: their last values are block 1's.
        let last = |s: &str| v[&format!("dyno_node_block_stage_seconds_last{{stage=\"{s}\"}}")];
        assert_eq!(last("adopted"), 0.005);
        assert_eq!(last("snapshot"), 0.02);
    }

    #[test]
    fn a_second_sets_tps_and_latency_and_an_empty_second_drops_the_latency() {
        let m = NodeMetrics::default();
        let latency = Latency {
            count: 10,
            p50: 2_000_000,
            p90: 5_000_000,
            p99: 9_000_000,
            max: 12_000_000,
        };
        m.observe(&Progress::Second {
            t: 1.0,
            tps: 1999.5,
            latency,
        });
        let v = values(&m.render());
        assert_eq!(v["dyno_node_tps"], 1999.5);
        assert_eq!(v["dyno_node_latency_seconds{quantile=\"0.5\"}"], 0.002);
        assert_eq!(v["dyno_node_latency_seconds{quantile=\"0.99\"}"], 0.009);
        m.observe(&Progress::Second {
            t: 2.0,
            tps: 0.0,
            latency: Latency {
                count: 0,
                ..latency
            },
        });
        let v = values(&m.render());
        assert_eq!(v["dyno_node_tps"], 0.0);
        assert!(!v.keys().any(|k| k.starts_with("dyno_node_latency_seconds")));
    }

    #[test]
    fn every_family_has_help_and_type_before_its_samples() {
        let m = NodeMetrics::default();
        m.observe(&block(1, Some(1), Some(1)));
        let text = m.render();
        let mut declared = std::collections::HashSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                declared.insert(rest.split(' ').next().unwrap().to_string());
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert!(declared.contains(name), "{name} sampled before its TYPE");
            }
        }
        assert_eq!(text.matches("# HELP ").count(), declared.len());
    }
}
