//! The search simulated before any process runs: revisions with known levels, each
//! step's rounds drawn with noise and decided by the same SPRT the bisection runs
//! (seeded, deterministic).

use super::*;
use dyno_stats::{sprt_three_way, PriorNoise, SprtSettings};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

fn normal(rng: &mut Pcg64) -> f64 {
    let u: f64 = rng.gen::<f64>().max(1e-300);
    let v: f64 = rng.gen();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// A simulated node: each revision's true level (log ratio to good), per-round noise, the
/// revisions that do not build.
struct Node {
    levels: Vec<f64>,
    sd: f64,
    broken: Vec<usize>,
    rng: Pcg64,
    prior: Option<PriorNoise>,
    rounds: usize,
}

impl Node {
    /// `culprits` are `(index, log change)`: every revision from `index` on carries it.
    fn new(revisions: usize, culprits: &[(usize, f64)], sd: f64, seed: u64) -> Node {
        let levels = (0..revisions)
            .map(|i| culprits.iter().filter(|c| c.0 <= i).map(|c| c.1).sum())
            .collect::<Vec<f64>>();
        let mut rng = Pcg64::seed_from_u64(seed);
        // The confirmation: 6 rounds of bad against good.
        let bad = levels[revisions - 1];
        let confirmation: Vec<f64> = (0..6).map(|_| bad + sd * normal(&mut rng)).collect();
        Node {
            levels,
            sd,
            broken: Vec::new(),
            rng,
            prior: PriorNoise::of(&confirmation),
            rounds: 0,
        }
    }

    fn step(&mut self, truth: f64, m0: f64, m1: f64) -> Answer {
        let settings = SprtSettings::default();
        let mut d = Vec::new();
        loop {
            d.push(truth + self.sd * normal(&mut self.rng));
            let look = sprt_three_way(&d, m0, m1, self.prior, &settings).unwrap();
            if let Some(decision) = look.decision {
                self.rounds += look.decided_at;
                return Answer::Decided {
                    decision,
                    mean: look.mean,
                    interval: look.mean_interval,
                };
            }
        }
    }

    fn answer(&mut self, q: &Query) -> Answer {
        match *q {
            Query::Test { index, m0, m1, .. } => {
                if self.broken.contains(&index) {
                    return Answer::Unbuildable;
                }
                self.step(self.levels[index], m0, m1)
            }
            Query::Confirm {
                parent,
                index,
                change,
            } => self.step(self.levels[index] - self.levels[parent], 0.0, change),
        }
    }
}

fn search(node: &Node, min_change: f64) -> Search {
    Search::new(SearchSettings {
        revisions: node.levels.len(),
        change: *node.levels.last().unwrap(),
        min_change,
    })
}

fn culprits(s: &Search) -> Vec<usize> {
    s.findings()
        .iter()
        .filter_map(|f| match f {
            Finding::Culprit { index, .. } => Some(*index),
            _ => None,
        })
        .collect()
}

#[test]
fn one_culprit_among_64_revisions_is_named_within_8_tested_revisions() {
    let (mut right, mut trials, mut most_tested) = (0, 0, 0);
    for culprit in 1..64 {
        for seed in 0..4 {
            let mut node = Node::new(64, &[(culprit, 0.095)], 0.02, seed * 100 + culprit as u64);
            let mut s = search(&node, 0.025);
            run(&mut s, |q| Ok::<_, ()>(node.answer(q))).unwrap();
            trials += 1;
            if culprits(&s) == [culprit] {
                right += 1;
                most_tested = most_tested.max(s.tested().len());
            }
        }
    }
    assert!(right as f64 >= 0.97 * trials as f64, "{right} of {trials}");
    assert!(most_tested <= 8, "{most_tested} revisions tested");
}

#[test]
fn two_culprits_of_six_percent_are_both_named_with_their_shares() {
    let mut both = 0;
    let trials = 60;
    for seed in 0..trials {
        let mut node = Node::new(64, &[(17, 0.058), (45, 0.058)], 0.015, seed);
        let mut s = search(&node, 0.025);
        run(&mut s, |q| Ok::<_, ()>(node.answer(q))).unwrap();
        let shares: Vec<(usize, f64)> = s
            .findings()
            .iter()
            .filter_map(|f| match f {
                Finding::Culprit { index, share, .. } => Some((*index, *share)),
                _ => None,
            })
            .collect();
        if shares.len() == 2
            && shares.iter().any(|c| c.0 == 17)
            && shares.iter().any(|c| c.0 == 45)
            && shares.iter().all(|c| (c.1 - 0.5).abs() < 0.2)
        {
            both += 1;
        }
    }
    assert!(both as f64 >= 0.9 * trials as f64, "{both} of {trials}");
}

#[test]
fn unbuildable_revisions_are_skipped_and_the_culprit_still_found() {
    let mut node = Node::new(64, &[(41, 0.095)], 0.02, 7);
    // The first midpoint and its nearest neighbour do not build.
    node.broken = vec![31, 32];
    let mut s = search(&node, 0.025);
    run(&mut s, |q| Ok::<_, ()>(node.answer(q))).unwrap();
    assert_eq!(culprits(&s), [41]);
    assert!(s.skipped().contains(&31), "{:?}", s.skipped());
    assert!(!s.tested().contains(&31));
}

#[test]
fn a_change_behind_unbuildable_commits_is_a_range() {
    let mut node = Node::new(16, &[(9, 0.095)], 0.02, 8);
    node.broken = vec![8];
    let mut s = search(&node, 0.025);
    run(&mut s, |q| Ok::<_, ()>(node.answer(q))).unwrap();
    assert!(
        s.findings().contains(&Finding::Range {
            low: 7,
            high: 9,
            change: 0.095
        }),
        "{:?}",
        s.findings()
    );
}

#[test]
fn a_wrong_between_at_an_end_is_caught_by_the_confirmation() {
    // A search told that revision 8 measured halfway (an erring step): the half below it
    // holds no change, so its search ends at revision 8, which its parent then matches.
    let mut s = Search::new(SearchSettings {
        revisions: 17,
        change: 0.1,
        min_change: 0.025,
    });
    let mut answers = vec![Answer::Decided {
        decision: SprtDecision::Between,
        mean: 0.05,
        interval: (0.03, 0.07),
    }];
    let like = |d| Answer::Decided {
        decision: d,
        mean: 0.0,
        interval: (0.0, 0.0),
    };
    // True culprit: 12. Below 8 every revision is like good; 8's parent too.
    let truth = |i: usize| if i >= 12 { 0.1 } else { 0.0 };
    while let Some(q) = s.next_query() {
        let a = if let Some(a) = answers.pop() {
            a
        } else {
            match q {
                Query::Test { index, m0, m1, .. } => {
                    let t = truth(index);
                    if (t - m0).abs() <= (t - m1).abs() {
                        like(SprtDecision::Low)
                    } else {
                        like(SprtDecision::High)
                    }
                }
                Query::Confirm { parent, index, .. } => {
                    let change = truth(index) - truth(parent);
                    if change == 0.0 {
                        like(SprtDecision::Low)
                    } else {
                        Answer::Decided {
                            decision: SprtDecision::High,
                            mean: change,
                            interval: (change - 0.01, change + 0.01),
                        }
                    }
                }
            }
        };
        s.answer(&q, a);
    }
    assert!(s
        .findings()
        .iter()
        .any(|f| matches!(f, Finding::Unconfirmed { index: 8, .. })));
    assert_eq!(culprits(&s), [12]);
}

#[test]
fn the_same_answers_replay_to_the_same_queries() {
    let mut node = Node::new(64, &[(20, 0.095)], 0.02, 9);
    let mut s = search(&node, 0.025);
    let mut log = Vec::new();
    run(&mut s, |q| {
        let a = node.answer(q);
        log.push((*q, a));
        Ok::<_, ()>(a)
    })
    .unwrap();
    let mut replay = search(&node, 0.025);
    for (q, a) in &log {
        assert_eq!(replay.next_query().as_ref(), Some(q));
        replay.answer(q, *a);
    }
    assert!(replay.done());
    assert_eq!(replay, s);
    assert_eq!(s.steps_left(), 0);
    let fresh = search(&node, 0.025);
    assert_eq!(
        fresh.steps_left(),
        6 + 1,
        "log2(62) tests and a confirmation"
    );
    assert_eq!(fresh.remaining(), [(0, 63)]);
}

#[test]
fn a_change_below_the_minimum_is_not_searched() {
    let mut s = Search::new(SearchSettings {
        revisions: 8,
        change: 0.01,
        min_change: 0.025,
    });
    assert!(s.done());
    assert_eq!(s.next_query(), None);
    assert_eq!(s.dropped(), [(0, 7)]);
}
