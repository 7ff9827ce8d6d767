//! The mempool: verified transactions waiting for a leader, deduplicated by signature,
//! and the fate of every transaction this node took in from a client.
//!
//! A transaction enters from a client (ingress, `local`) or from a peer (relay). It is
//! refused when it does not decode (`malformed`), its signature fails
//! (`invalid_signature`), its signature was seen before (`duplicate`: in the pool, or
//! executed within the last [`SEEN_CAPACITY`] transactions), or the pool is full
//! (`dropped_full`). It leaves the pool when a block holding it is adopted: executed or
//! failed. A local transaction still in the pool at the end is `in_flight`. So for local
//! transactions `received = malformed + invalid_signature + duplicate + dropped_full +
//! executed + failed + in_flight`, exactly.

use std::collections::VecDeque;

use serde::Serialize;

use dyno_txn::tx;

/// Signatures remembered after they leave the pool (so a late relay is a duplicate):
/// 2^18 tags, about 13 s of a 20000 tx/s load and ~12 MB, per node. A relay later
/// than that is admitted again, and the forger leaves it out of its block (the chain's
/// own replay check, [`crate::chain::DEDUP_DEPTH`] blocks deep).
pub const SEEN_CAPACITY: usize = 1 << 18;

/// Fates of the transactions clients sent to this node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Fates {
    /// Taken in from clients.
    pub received: u64,
    /// Not a transaction.
    pub malformed: u64,
    /// Bad signature.
    pub invalid_signature: u64,
    /// Seen before.
    pub duplicate: u64,
    /// The pool was full.
    pub dropped_full: u64,
    /// Executed in an adopted block.
    pub executed: u64,
    /// Failed (fee charged or not) in an adopted block.
    pub failed: u64,
    /// Still in the pool.
    pub in_flight: u64,
}

impl Fates {
    /// Sum of every fate (equals `received` when the accounting holds).
    pub fn settled(&self) -> u64 {
        self.malformed
            + self.invalid_signature
            + self.duplicate
            + self.dropped_full
            + self.executed
            + self.failed
            + self.in_flight
    }
}

/// How an offered transaction was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// New: in the pool now (relay it).
    Added,
    /// Refused, with the fate it got.
    Malformed,
    /// Bad signature.
    InvalidSignature,
    /// Seen before.
    Duplicate,
    /// Pool full.
    Full,
}

#[derive(Debug)]
struct Waiting {
    bytes: Vec<u8>,
    local: bool,
}

/// The pool.
#[derive(Debug)]
pub struct Mempool {
    capacity: usize,
    waiting: tx::TagMap<Waiting>,
    order: VecDeque<u128>,
    seen: tx::TagSet,
    seen_order: VecDeque<u128>,
    fates: Fates,
    /// Transactions from peers refused (not counted as fates: they are another node's).
    pub relay_refused: u64,
    /// Signers' keys, decompressed once each (relays are checked on the loop).
    keys: dyno_txn::sig::SignerKeys,
}

impl Mempool {
    /// An empty pool holding at most `capacity` transactions.
    pub fn new(capacity: usize) -> Mempool {
        Mempool {
            capacity,
            waiting: tx::TagMap::default(),
            order: VecDeque::new(),
            seen: tx::TagSet::default(),
            seen_order: VecDeque::new(),
            fates: Fates::default(),
            relay_refused: 0,
            keys: dyno_txn::sig::SignerKeys::new(),
        }
    }

    /// Offers a transaction (`local`: from a client of this node).
    pub fn offer(&mut self, bytes: &[u8], local: bool) -> Admit {
        self.offer_verified(bytes, local, None)
    }

    /// Offers a transaction whose signature was already checked elsewhere
    /// (`signature_ok`; none: check it here). The ingress checks signatures on its own
    /// thread, so the node loop spends its time on blocks.
    pub fn offer_verified(
        &mut self,
        bytes: &[u8],
        local: bool,
        signature_ok: Option<bool>,
    ) -> Admit {
        let admit = self.admit(bytes, local, signature_ok);
        if local {
            let f = &mut self.fates;
            f.received += 1;
            match admit {
                Admit::Added => f.in_flight += 1,
                Admit::Malformed => f.malformed += 1,
                Admit::InvalidSignature => f.invalid_signature += 1,
                Admit::Duplicate => f.duplicate += 1,
                Admit::Full => f.dropped_full += 1,
            }
        } else if admit != Admit::Added {
            self.relay_refused += 1;
        }
        admit
    }

    /// Offers the transactions of a peer's relay frame, in order. The signatures of those
    /// neither malformed nor seen before are checked as one batch (ZIP 215, whose
    /// verdicts are single verification's), not one by one on the node loop: a follower
    /// admits a leader's relayed load at the batch rate. Each answer is what [`offer`]
    /// would have given.
    ///
    /// [`offer`]: Mempool::offer
    pub fn offer_relayed(&mut self, txs: Vec<Vec<u8>>) -> Vec<(Vec<u8>, Admit)> {
        let fresh: Vec<bool> = txs
            .iter()
            .map(|b| tx::decode(b).is_ok() && !self.seen.contains(&tx::sig_tag(b)))
            .collect();
        let unchecked: Vec<&[u8]> = txs
            .iter()
            .zip(&fresh)
            .filter_map(|(b, f)| f.then_some(b.as_slice()))
            .collect();
        let mut verdicts = Vec::with_capacity(unchecked.len());
        tx::verify_many(&unchecked, &mut verdicts);
        let mut verdicts = verdicts.into_iter();
        txs.into_iter()
            .zip(fresh)
            .map(|(b, fresh)| {
                let checked = if fresh { verdicts.next() } else { None };
                let admit = self.offer_verified(&b, false, checked);
                (b, admit)
            })
            .collect()
    }

    fn admit(&mut self, bytes: &[u8], local: bool, signature_ok: Option<bool>) -> Admit {
        if tx::decode(bytes).is_err() {
            return Admit::Malformed;
        }
        let tag = tx::sig_tag(bytes);
        if self.seen.contains(&tag) {
            return Admit::Duplicate;
        }
        if self.waiting.len() >= self.capacity {
            return Admit::Full;
        }
        if !signature_ok.unwrap_or_else(|| dyno_txn::tx::verify_cached(bytes, &mut self.keys)) {
            return Admit::InvalidSignature;
        }
        self.remember(tag);
        self.waiting.insert(
            tag,
            Waiting {
                bytes: bytes.to_vec(),
                local,
            },
        );
        self.order.push_back(tag);
        Admit::Added
    }

    fn remember(&mut self, tag: u128) {
        if self.seen.insert(tag) {
            self.seen_order.push_back(tag);
            if self.seen_order.len() > SEEN_CAPACITY {
                if let Some(old) = self.seen_order.pop_front() {
                    self.seen.remove(&old);
                }
            }
        }
    }

    /// Puts back a transaction of a block a fork switch abandoned (already verified and
    /// seen; not a client transaction any more: its fate was counted).
    pub fn put_back(&mut self, bytes: &[u8]) {
        let tag = tx::sig_tag(bytes);
        if self.waiting.contains_key(&tag) {
            return;
        }
        self.waiting.insert(
            tag,
            Waiting {
                bytes: bytes.to_vec(),
                local: false,
            },
        );
        self.order.push_back(tag);
    }

    /// Up to `max` waiting transactions, oldest first (they stay until a block holding
    /// them is adopted, so a block lost to a fork does not lose them).
    pub fn snapshot(&mut self, max: usize) -> Vec<Vec<u8>> {
        self.order.retain(|t| self.waiting.contains_key(t));
        self.order
            .iter()
            .take(max)
            .filter_map(|t| self.waiting.get(t).map(|w| w.bytes.clone()))
            .collect()
    }

    /// Drops tags of transactions that left the pool from `order` once they outnumber
    /// those waiting, so followers (who never snapshot) do not grow it forever; the
    /// amortised cost is O(1) per settled transaction.
    fn trim_order(&mut self) {
        if self.order.len() > 2 * self.waiting.len() + 1024 {
            self.order.retain(|t| self.waiting.contains_key(t));
        }
    }

    /// A block holding these (tag, executed) outcomes was adopted: they leave the pool.
    pub fn settle(&mut self, outcomes: &[(u128, bool)]) {
        for &(tag, executed) in outcomes {
            self.remember(tag);
            if let Some(w) = self.waiting.remove(&tag) {
                if w.local {
                    self.fates.in_flight -= 1;
                    if executed {
                        self.fates.executed += 1;
                    } else {
                        self.fates.failed += 1;
                    }
                }
            }
        }
        self.trim_order();
    }

    /// These exact bytes wait in the pool (so their signature was verified when they
    /// came in).
    pub fn holds(&self, bytes: &[u8]) -> bool {
        self.waiting
            .get(&tx::sig_tag(bytes))
            .is_some_and(|w| w.bytes == bytes)
    }

    /// Transactions waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The fates of local transactions so far.
    pub fn fates(&self) -> Fates {
        self.fates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_txn::bank::{fund_initial_accounts, transfer_block};

    /// Fuzzing found it (fuzz/ ingress_tx, crash-45ea9f88): a zero signature by the
    /// all-zero key verifies under ZIP 215 for any message (a small-order key, which the
    /// rule accepts), so "verifies" does not mean "is a transaction". Such bytes that do
    /// not decode are malformed, whatever their signature says, here and when relayed.
    #[test]
    fn fuzz_crash_45ea9f88_a_signature_that_verifies_does_not_make_bytes_a_transaction() {
        let mut bytes = vec![0u8; dyno_txn::tx::HEADER_LEN + 4];
        bytes[145] = 1; // one account...
        bytes[136] = 7; // ...of a kind that does not exist
        assert!(dyno_txn::tx::verify(&bytes), "ZIP 215 accepts the all-zero key");
        assert!(dyno_txn::tx::decode(&bytes).is_err());
        let mut m = Mempool::new(4);
        assert_eq!(m.offer_verified(&bytes, true, Some(true)), Admit::Malformed);
        assert_eq!(m.offer(&bytes, true), Admit::Malformed);
        let relayed = Mempool::new(4).offer_relayed(vec![bytes.clone()]);
        assert_eq!(relayed[0].1, Admit::Malformed);
    }

    #[test]
    fn every_local_transaction_gets_exactly_one_fate() {
        let g = fund_initial_accounts(8, 1_000, 1);
        let txs = transfer_block(&g, 6, 3);
        let mut m = Mempool::new(3);
        let mut bad_sig = txs[5].clone();
        bad_sig[70] ^= 1;
        assert_eq!(m.offer(&txs[0], true), Admit::Added);
        assert_eq!(m.offer(&txs[0], true), Admit::Duplicate);
        assert_eq!(m.offer(&[1, 2, 3], true), Admit::Malformed);
        assert_eq!(m.offer(&bad_sig, true), Admit::InvalidSignature);
        assert_eq!(m.offer(&txs[1], false), Admit::Added);
        assert_eq!(m.offer(&txs[2], true), Admit::Added);
        assert_eq!(m.offer(&txs[3], true), Admit::Full);
        let snap = m.snapshot(10);
        assert_eq!(snap, vec![txs[0].clone(), txs[1].clone(), txs[2].clone()]);
        m.settle(&[(tx::sig_tag(&txs[0]), true), (tx::sig_tag(&txs[1]), false)]);
        let f = m.fates();
        assert_eq!(f.received, 6);
        assert_eq!((f.executed, f.failed, f.in_flight), (1, 0, 1));
        assert_eq!(f.settled(), f.received);
        assert_eq!(
            m.offer(&txs[0], true),
            Admit::Duplicate,
            "executed stays seen"
        );
        assert_eq!(m.len(), 1);
        assert!(m.holds(&txs[2]) && !m.holds(&txs[0]) && !m.holds(&bad_sig));
    }

    #[test]
    fn a_relay_frame_is_admitted_as_one_by_one() {
        let g = fund_initial_accounts(16, 1_000, 1);
        let txs = transfer_block(&g, 40, 3);
        let mut frame: Vec<Vec<u8>> = txs.clone();
        frame[3][70] ^= 1; // a bad signature
        frame[7] = vec![1, 2, 3]; // malformed
        frame[9] = frame[8].clone(); // a duplicate inside the frame
        let mut single = Mempool::new(30);
        let mut batched = Mempool::new(30);
        // Some seen before the frame, on both sides.
        for t in &txs[20..25] {
            assert_eq!(single.offer(t, false), Admit::Added);
            assert_eq!(batched.offer(t, false), Admit::Added);
        }
        let expected: Vec<Admit> = frame.iter().map(|b| single.offer(b, false)).collect();
        let got: Vec<Admit> = batched
            .offer_relayed(frame.clone())
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        assert_eq!(got, expected);
        assert!(expected.contains(&Admit::InvalidSignature));
        assert!(
            expected.contains(&Admit::Full),
            "capacity reached within the frame"
        );
        assert_eq!(batched.relay_refused, single.relay_refused);
        assert_eq!(batched.snapshot(100), single.snapshot(100));
    }

    #[test]
    fn settling_trims_the_order_without_a_snapshot() {
        let g = fund_initial_accounts(64, 1_000_000, 1);
        let txs = transfer_block(&g, 1100, 5);
        let mut m = Mempool::new(10_000);
        for t in &txs {
            assert_eq!(m.offer(t, false), Admit::Added);
            m.settle(&[(tx::sig_tag(t), true)]);
        }
        assert!(m.is_empty());
        assert!(m.order.len() <= 1025, "order kept {} tags", m.order.len());
        assert_eq!(m.offer(&txs[0], false), Admit::Duplicate);
    }
}
