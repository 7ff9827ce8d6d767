//! The search of a bisection, pure: which revision to test next, what each answer means,
//! and where the change lies once the answers are in. It runs no process; an oracle
//! answers its [`Query`]s ([`run`]), and the same answers always give the same queries,
//! so a bisection read back from the store replays to where it stopped.
//!
//! Revisions are numbered along the commit list: 0 is good, `n` is bad, 1 to `n - 1` the
//! commits between (oldest first). Each known revision has a **level**, the mean log
//! ratio of its cost to good's: good's is 0, bad's the confirmed change. The search keeps
//! the ranges `(low, high)` of known revisions whose levels differ by at least
//! [`SearchSettings::min_change`] and whose commits between are not all tested:
//!
//! - **Test** the untested, buildable revision nearest the middle of the first range
//!   (plain bisection; a step's error rates are the SPRT's, 1% at the ends, which does
//!   not call for probabilistic bisection); the answer says whether it behaves like
//!   `low`, like `high`, or between.
//! - Like `low`: the change is above it, the range becomes `(tested, high)`; like `high`:
//!   `(low, tested)`. **Between**: part of the change is on each side; its measured level
//!   splits the range in two, both searched, so several culprits are found, each with its
//!   share. A range whose two levels differ by less than `min_change` holds no change
//!   worth naming and is dropped.
//! - A revision that does not build is **skipped** (as `git bisect skip`): its neighbour
//!   nearest the middle is tested instead. A range whose commits between all fail to
//!   build ends as a range: the change is one of them or its top.
//! - A range of adjacent revisions names its top as a **culprit**, which is then
//!   **confirmed** against its parent directly (the two measured side by side): the
//!   change it causes, with its interval, comes from that comparison, and a culprit
//!   whose parent measures the same (an earlier step that erred) is reported as not
//!   confirmed rather than named.

use dyno_stats::SprtDecision;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What the search is told before it starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// Revisions from good (0) to bad (`revisions - 1`).
    pub revisions: usize,
    /// The confirmed change: bad's level (mean log ratio to good).
    pub change: f64,
    /// A range whose levels differ by less than this (log ratio) is not searched.
    pub min_change: f64,
}

/// What the search asks the oracle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Query {
    /// Does revision `index` behave like `low` (level `m0`) or `high` (level `m1`)?
    /// Measured against good.
    Test {
        /// The revision to test.
        index: usize,
        /// The range's low end.
        low: usize,
        /// The range's high end.
        high: usize,
        /// `low`'s level.
        m0: f64,
        /// `high`'s level.
        m1: f64,
    },
    /// Does `index` differ from its parent by `change` (or by nothing)? Measured
    /// against the parent.
    Confirm {
        /// The range's low end (the culprit's parent on the commit list).
        parent: usize,
        /// The culprit.
        index: usize,
        /// The change the search attributes to it (log ratio).
        change: f64,
    },
}

impl Query {
    /// The revision the query measures (for a confirmation, the culprit).
    pub fn index(&self) -> usize {
        match self {
            Query::Test { index, .. } | Query::Confirm { index, .. } => *index,
        }
    }
}

/// The oracle's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// The revision does not build.
    Unbuildable,
    /// The sequential test decided.
    Decided {
        /// Like the low end (for a confirmation: no change), between, or like the high end.
        decision: SprtDecision,
        /// The measured mean log ratio (to good for a test; to the parent for a
        /// confirmation).
        mean: f64,
        /// Its interval.
        interval: (f64, f64),
    },
}

/// Where the search found (part of) the change.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A commit that causes a change, confirmed against its parent.
    Culprit {
        /// The commit.
        index: usize,
        /// The revision it was compared with (its parent on the commit list).
        parent: usize,
        /// The change it causes (log ratio, measured against the parent) and its interval.
        change: f64,
        /// Its interval.
        interval: (f64, f64),
        /// Its share of the confirmed change.
        share: f64,
    },
    /// A commit the search pointed at whose parent measured the same: not named.
    Unconfirmed {
        /// The commit.
        index: usize,
        /// Its parent.
        parent: usize,
        /// What the direct comparison measured.
        change: f64,
    },
    /// The change lies in `(low, high]`, whose commits between do not build.
    Range {
        /// The last revision before the change.
        low: usize,
        /// The first revision after it.
        high: usize,
        /// The change across the range (log ratio of the levels).
        change: f64,
    },
}

/// The state of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    settings: SearchSettings,
    levels: BTreeMap<usize, f64>,
    ranges: VecDeque<(usize, usize)>,
    /// Adjacent ranges waiting for their confirmation.
    to_confirm: VecDeque<(usize, usize)>,
    skipped: BTreeSet<usize>,
    findings: Vec<Finding>,
    /// Ranges dropped because their change is below `min_change`.
    dropped: Vec<(usize, usize)>,
    tested: BTreeSet<usize>,
}

impl Search {
    /// A search between good (0) and bad (`settings.revisions - 1`), bad's level the
    /// confirmed change.
    pub fn new(settings: SearchSettings) -> Search {
        let bad = settings.revisions.saturating_sub(1);
        let mut s = Search {
            settings,
            levels: BTreeMap::from([(0, 0.0), (bad, settings.change)]),
            ranges: VecDeque::new(),
            to_confirm: VecDeque::new(),
            skipped: BTreeSet::new(),
            findings: Vec::new(),
            dropped: Vec::new(),
            tested: BTreeSet::new(),
        };
        s.push_range(0, bad);
        s
    }

    fn level(&self, i: usize) -> f64 {
        self.levels.get(&i).copied().unwrap_or(f64::NAN)
    }

    /// Queues `(low, high)`: for confirmation when adjacent, dropped when its change is
    /// too small, searched otherwise.
    fn push_range(&mut self, low: usize, high: usize) {
        let change = self.level(high) - self.level(low);
        if high <= low {
            return;
        }
        if change.abs() < self.settings.min_change || change.is_nan() {
            self.dropped.push((low, high));
        } else if high == low + 1 {
            self.to_confirm.push_back((low, high));
        } else {
            self.ranges.push_back((low, high));
        }
    }

    /// The untested, buildable revision of `(low, high)` nearest its middle (the lower
    /// of two as near), if any.
    fn candidate(&self, low: usize, high: usize) -> Option<usize> {
        let mid = (low + high) / 2;
        (low + 1..high)
            .filter(|i| !self.skipped.contains(i))
            .min_by_key(|i| (i.abs_diff(mid), *i))
    }

    /// The next query, or `None` when the search is done. Ranges whose commits between
    /// all fail to build become findings here.
    pub fn next_query(&mut self) -> Option<Query> {
        while let Some(&(low, high)) = self.ranges.front() {
            if let Some(index) = self.candidate(low, high) {
                return Some(Query::Test {
                    index,
                    low,
                    high,
                    m0: self.level(low),
                    m1: self.level(high),
                });
            }
            self.ranges.pop_front();
            self.findings.push(Finding::Range {
                low,
                high,
                change: self.level(high) - self.level(low),
            });
        }
        let &(parent, index) = self.to_confirm.front()?;
        Some(Query::Confirm {
            parent,
            index,
            change: self.level(index) - self.level(parent),
        })
    }

    /// Takes the oracle's answer to `query` (the one [`Search::next`] returned).
    pub fn answer(&mut self, query: &Query, answer: Answer) {
        match *query {
            Query::Test {
                index, low, high, ..
            } => {
                if self.ranges.front() != Some(&(low, high)) {
                    return;
                }
                let Answer::Decided { decision, mean, .. } = answer else {
                    self.skipped.insert(index);
                    return;
                };
                self.tested.insert(index);
                self.ranges.pop_front();
                let level = match decision {
                    SprtDecision::Low => self.level(low),
                    SprtDecision::High => self.level(high),
                    SprtDecision::Between => mean,
                };
                self.levels.insert(index, level);
                match decision {
                    SprtDecision::Low => self.push_range(index, high),
                    SprtDecision::High => self.push_range(low, index),
                    SprtDecision::Between => {
                        self.push_range(low, index);
                        self.push_range(index, high);
                    }
                }
            }
            Query::Confirm { parent, index, .. } => {
                if self.to_confirm.front() != Some(&(parent, index)) {
                    return;
                }
                self.to_confirm.pop_front();
                let (decision, mean, interval) = match answer {
                    Answer::Decided {
                        decision,
                        mean,
                        interval,
                    } => (decision, mean, interval),
                    // Both were built before; a build lost since counts as unmeasured.
                    Answer::Unbuildable => (SprtDecision::Low, f64::NAN, (f64::NAN, f64::NAN)),
                };
                self.findings.push(match decision {
                    SprtDecision::Low => Finding::Unconfirmed {
                        index,
                        parent,
                        change: mean,
                    },
                    _ => Finding::Culprit {
                        index,
                        parent,
                        change: mean,
                        interval,
                        share: mean / self.settings.change,
                    },
                });
            }
        }
    }

    /// Whether the search has nothing left to ask.
    pub fn done(&self) -> bool {
        self.ranges.is_empty() && self.to_confirm.is_empty()
    }

    /// What was found so far, in the order found.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The revisions that did not build.
    pub fn skipped(&self) -> &BTreeSet<usize> {
        &self.skipped
    }

    /// The revisions tested (decided), good and bad not counted.
    pub fn tested(&self) -> &BTreeSet<usize> {
        &self.tested
    }

    /// Ranges left unsearched because their change is below `min_change`.
    pub fn dropped(&self) -> &[(usize, usize)] {
        &self.dropped
    }

    /// The ranges still to search, and the adjacent ones still to confirm.
    pub fn remaining(&self) -> Vec<(usize, usize)> {
        self.ranges
            .iter()
            .chain(self.to_confirm.iter())
            .copied()
            .collect()
    }

    /// The tests still expected: about `log2` of each range's untested commits, plus a
    /// confirmation per range (more if steps come out between).
    pub fn steps_left(&self) -> usize {
        let tests: usize = self
            .ranges
            .iter()
            .map(|&(low, high)| {
                let inner = (low + 1..high)
                    .filter(|i| !self.skipped.contains(i))
                    .count();
                usize::BITS as usize - inner.leading_zeros() as usize
            })
            .sum();
        tests + self.ranges.len() + self.to_confirm.len()
    }
}

/// Runs `search` to the end with `oracle` answering each query; stops early (returning
/// the oracle's error) when it fails.
pub fn run<E>(
    search: &mut Search,
    mut oracle: impl FnMut(&Query) -> Result<Answer, E>,
) -> Result<(), E> {
    while let Some(q) = search.next_query() {
        let a = oracle(&q)?;
        search.answer(&q, a);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
