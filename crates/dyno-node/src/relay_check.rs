//! Checking the signatures of peers' relayed transactions off the node loop.
//!
//! A follower takes in its leader's whole load as relays. Checked on the node loop (one
//! batch per relay frame), they capped a follower at one thread's Ed25519 batch rate,
//! and the same thread validates and adopts blocks: above that rate a follower fell
//! behind its leader. Here what hands the peer network's events to the loop gives each
//! relay frame to one of the verify threads in turn (the node's own, which check the
//! ingress's transactions too: [`VerifyJobs`]), which checks the frame's signatures as
//! one batch (ZIP 215: the verdicts of single checks) and passes the frame on to the
//! node loop with a verdict per transaction ([`Input::CheckedRelay`]); the loop only
//! admits them.
//!
//! A transaction relayed by several peers is checked once: the hand-over remembers the
//! signature tags it sent to be checked (the last [`SEEN_CAPACITY`]), and a repeat
//! goes on with no verdict, for the loop's mempool to refuse as a duplicate (or, should
//! the first copy still be on its way, to check itself).

use std::collections::VecDeque;
use std::sync::mpsc::Sender;

use dyno_txn::tx;

use crate::mempool::SEEN_CAPACITY;
use crate::transport::Input;
use crate::verify::{VerifyJobs, VerifyPool};

/// The hand-over's memory of what it sent to be checked, and where checks run.
pub struct RelayCheck {
    jobs: Option<VerifyJobs>,
    /// The verify threads, when this started its own ([`RelayCheck::start`]).
    own: Option<VerifyPool>,
    inbox: Sender<Input>,
    sent: tx::TagSet,
    sent_order: VecDeque<u128>,
}

impl std::fmt::Debug for RelayCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayCheck")
            .field(
                "threads",
                &self.jobs.as_ref().map_or(0, VerifyJobs::threads),
            )
            .finish()
    }
}

impl RelayCheck {
    /// Checks on the threads behind `jobs` (a node's verify threads), passing checked
    /// frames to `inbox`.
    pub fn on(jobs: VerifyJobs, inbox: Sender<Input>) -> RelayCheck {
        RelayCheck {
            jobs: Some(jobs),
            own: None,
            inbox,
            sent: tx::TagSet::default(),
            sent_order: VecDeque::new(),
        }
    }

    /// Starts `n` verify threads (at least 1) of its own, passing checked frames to
    /// `inbox`.
    pub fn start(n: usize, inbox: Sender<Input>) -> std::io::Result<RelayCheck> {
        let pool = VerifyPool::start(n, 1, |_, _| true)?;
        let mut check = RelayCheck::on(pool.jobs(), inbox);
        check.own = Some(pool);
        Ok(check)
    }

    /// Hands a peer's relay frame to the next thread; false once the threads are gone.
    pub fn submit(&mut self, peer: String, txs: Vec<Vec<u8>>) -> bool {
        let txs: Vec<(Vec<u8>, bool)> = txs
            .into_iter()
            .map(|t| {
                let fresh = self.remember(tx::sig_tag(&t));
                (t, fresh)
            })
            .collect();
        let Some(jobs) = &self.jobs else {
            return false;
        };
        let out = self.inbox.clone();
        jobs.run(move || {
            let _ = out.send(check(peer, txs));
        })
    }

    /// Remembers `tag`; true when it was not remembered yet.
    fn remember(&mut self, tag: u128) -> bool {
        if !self.sent.insert(tag) {
            return false;
        }
        self.sent_order.push_back(tag);
        if self.sent_order.len() > SEEN_CAPACITY {
            if let Some(old) = self.sent_order.pop_front() {
                self.sent.remove(&old);
            }
        }
        true
    }

    /// Stops taking frames and waits for the threads it started to pass on what they
    /// hold (checks on a node's own verify threads end with them).
    pub fn finish(mut self) {
        self.jobs = None;
        if let Some(pool) = self.own.take() {
            pool.finish();
        }
    }
}

/// One relay frame checked: the transactions to check as one batch, the frame passed on
/// with a verdict for each (none for a repeat).
fn check(peer: String, txs: Vec<(Vec<u8>, bool)>) -> Input {
    let mut verdicts = Vec::new();
    let fresh: Vec<&[u8]> = txs
        .iter()
        .filter(|(_, check)| *check)
        .map(|(t, _)| t.as_slice())
        .collect();
    tx::verify_many(&fresh, &mut verdicts);
    let mut v = verdicts.into_iter();
    let txs = txs
        .into_iter()
        .map(|(t, check)| {
            let verdict = if check { v.next() } else { None };
            (t, verdict)
        })
        .collect();
    Input::CheckedRelay { peer, txs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_txn::bank::{fund_initial_accounts, transfer_block};
    use std::sync::mpsc::channel;

    #[test]
    fn frames_come_back_with_single_checks_verdicts_and_repeats_unchecked() {
        let g = fund_initial_accounts(16, 1_000, 1);
        let txs = transfer_block(&g, 90, 3);
        let (inbox, rx) = channel();
        let mut check = RelayCheck::start(3, inbox).unwrap();
        let mut frames = Vec::new();
        for (k, chunk) in txs.chunks(30).enumerate() {
            let mut frame = chunk.to_vec();
            frame[5][70] ^= 1; // a bad signature in every frame
            if k > 0 {
                frame.push(txs[0].clone()); // a repeat of the first frame's first
            }
            frames.push(frame.clone());
            assert!(check.submit(format!("p{k}"), frame));
        }
        check.finish();
        type Checked = (String, Vec<(Vec<u8>, Option<bool>)>);
        let mut got: Vec<Checked> = rx
            .try_iter()
            .map(|i| match i {
                Input::CheckedRelay { peer, txs } => (peer, txs),
                other => panic!("{other:?}"),
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got.len(), 3);
        for (k, ((peer, checked), sent)) in got.iter().zip(&frames).enumerate() {
            assert_eq!(peer, &format!("p{k}"));
            assert_eq!(checked.len(), sent.len());
            for (i, ((bytes, verdict), s)) in checked.iter().zip(sent).enumerate() {
                assert_eq!(bytes, s);
                let repeat = k > 0 && i == sent.len() - 1;
                let want = (!repeat).then(|| dyno_txn::tx::verify(s));
                assert_eq!(*verdict, want, "frame {k}, transaction {i}");
            }
            assert_eq!(checked[5].1, Some(false));
        }
    }
}
