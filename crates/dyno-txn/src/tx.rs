//! Transactions: a compact binary format, signing and decoding.
//!
//! # Wire format (little-endian)
//!
//! ```text
//! offset  size  field
//!      0    64  Ed25519 signature over bytes 64.. (the message)
//!     64    32  signer public key (must be the key of the fee payer, accounts[0])
//!     96    32  recent hash (the bench's bank does not keep a hash queue; benchg uses it
//!               as a nonce so that every generated transaction is unique)
//!    128     8  fee, lamport-like units, charged to accounts[0] even when execution fails
//!    136     1  kind: 0 = transfer, 1 = script
//!    137     8  transfer: amount moved from accounts[0] to accounts[1]
//!               script:   compute budget (rounds of work the bank performs)
//!    145     1  account count n (1..=MAX_ACCOUNTS)
//!    146   4*n  accounts: u32 each; bits 0..31 an index into the genesis account space,
//!               bit 31 set = writable
//! ```
//!
//! Accounts are indices into a fixed account space (the genesis accounts) rather than
//! 32-byte keys: a transaction stays small (154 bytes for a transfer) and the bank's
//! store is a flat array, while the signer key still binds the fee payer.

use crate::sig::{self, Signed, SignerKey};
use ed25519_dalek::{Signer, SigningKey};
use thiserror::Error;

/// Bytes of a signature.
pub const SIG_LEN: usize = 64;
/// Offset of the signed message.
pub const MSG_OFFSET: usize = SIG_LEN;
/// Bytes before the account list.
pub const HEADER_LEN: usize = 146;
/// Most accounts a transaction may name.
pub const MAX_ACCOUNTS: usize = 8;
/// Offset of the kind byte (0 = transfer, 1 = script).
pub const KIND_AT: usize = 136;
/// Largest encoded transaction.
pub const MAX_TX_LEN: usize = HEADER_LEN + 4 * MAX_ACCOUNTS;
/// Bit of an account entry marking it writable.
pub const WRITABLE: u32 = 1 << 31;
/// Cost units charged for any transaction (signature, account loads).
pub const BASE_COST: u64 = 1_000;
/// Largest compute budget of a script.
pub const MAX_BUDGET: u64 = 1 << 24;

/// What a transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// Move `amount` from `accounts[0]` to `accounts[1]`.
    Transfer {
        /// Units moved.
        amount: u64,
    },
    /// Run `budget` rounds of compute over the listed accounts.
    Script {
        /// Rounds of work.
        budget: u64,
    },
}

/// One account reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccountRef {
    /// Index into the genesis account space.
    pub index: u32,
    /// Written by the transaction (a write lock), else read only.
    pub writable: bool,
}

/// A decoded transaction message (everything but the signature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Signer (fee payer) public key.
    pub signer: [u8; 32],
    /// Recent hash (a nonce here).
    pub recent_hash: [u8; 32],
    /// Fee.
    pub fee: u64,
    /// Kind.
    pub kind: TxKind,
    /// Accounts, fee payer first.
    pub accounts: Vec<AccountRef>,
}

/// Why bytes are not a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// Fewer bytes than the header or the account list needs.
    #[error("transaction truncated: {0} bytes")]
    Truncated(usize),
    /// More bytes than the account list accounts for.
    #[error("transaction has {0} trailing bytes")]
    Trailing(usize),
    /// Unknown kind byte.
    #[error("unknown transaction kind {0}")]
    Kind(u8),
    /// Account count out of range.
    #[error("account count {0} not in 1..={MAX_ACCOUNTS}")]
    AccountCount(u8),
    /// A transfer needs two distinct accounts, the first two writable; a script's
    /// budget is bounded; the payer must be writable.
    #[error("malformed transaction: {0}")]
    Malformed(&'static str),
}

/// A transaction viewed in place: the signature and the decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tx {
    /// Signature.
    pub signature: [u8; 64],
    /// Message.
    pub message: Message,
}

impl Message {
    /// Appends the encoded message to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.signer);
        out.extend_from_slice(&self.recent_hash);
        out.extend_from_slice(&self.fee.to_le_bytes());
        let (k, v) = match self.kind {
            TxKind::Transfer { amount } => (0u8, amount),
            TxKind::Script { budget } => (1u8, budget),
        };
        out.push(k);
        out.extend_from_slice(&v.to_le_bytes());
        out.push(self.accounts.len() as u8);
        for a in &self.accounts {
            let w = a.index & !WRITABLE | if a.writable { WRITABLE } else { 0 };
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Cost units the scheduler charges against block limits.
    pub fn cost(&self) -> u64 {
        match self.kind {
            TxKind::Transfer { .. } => BASE_COST,
            TxKind::Script { budget } => BASE_COST + budget,
        }
    }

    /// Signs the message, returning the encoded transaction.
    pub fn sign(&self, key: &SigningKey) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_TX_LEN);
        out.extend_from_slice(&[0; SIG_LEN]);
        self.encode_into(&mut out);
        let sig = key.sign(&out[MSG_OFFSET..]);
        out[..SIG_LEN].copy_from_slice(&sig.to_bytes());
        out
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The value field of encoded transaction `b` (a transfer's amount, a script's budget),
/// read in place: `b` must hold a whole header.
pub(crate) fn value_in(b: &[u8]) -> u64 {
    u64_at(b, KIND_AT + 1)
}

/// Account `k`'s index in encoded transaction `b`, read in place: `b` must be a
/// transaction [`decode`] took, with more than `k` accounts.
pub(crate) fn account_in(b: &[u8], k: usize) -> u32 {
    let at = HEADER_LEN + 4 * k;
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) & !WRITABLE
}

/// Whether encoded transaction `b` (one [`decode`] took) is a transfer.
pub(crate) fn is_transfer(b: &[u8]) -> bool {
    b[KIND_AT] == 0
}

/// Decodes a transaction; never panics on any input.
pub fn decode(b: &[u8]) -> Result<Tx, DecodeError> {
    if b.len() < HEADER_LEN {
        return Err(DecodeError::Truncated(b.len()));
    }
    let n = b[145];
    if n == 0 || n as usize > MAX_ACCOUNTS {
        return Err(DecodeError::AccountCount(n));
    }
    let need = HEADER_LEN + 4 * n as usize;
    if b.len() < need {
        return Err(DecodeError::Truncated(b.len()));
    }
    if b.len() > need {
        return Err(DecodeError::Trailing(b.len() - need));
    }
    let v = value_in(b);
    let kind = match b[KIND_AT] {
        0 => TxKind::Transfer { amount: v },
        1 => TxKind::Script { budget: v },
        k => return Err(DecodeError::Kind(k)),
    };
    let accounts: Vec<AccountRef> = (0..n as usize)
        .map(|i| {
            let at = HEADER_LEN + 4 * i;
            let w = u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
            AccountRef {
                index: w & !WRITABLE,
                writable: w & WRITABLE != 0,
            }
        })
        .collect();
    if !accounts[0].writable {
        return Err(DecodeError::Malformed("fee payer not writable"));
    }
    match kind {
        TxKind::Transfer { .. } => {
            if accounts.len() < 2 || !accounts[1].writable || accounts[0].index == accounts[1].index
            {
                return Err(DecodeError::Malformed(
                    "transfer needs two distinct writable accounts",
                ));
            }
        }
        TxKind::Script { budget } => {
            if budget > MAX_BUDGET {
                return Err(DecodeError::Malformed("script budget too large"));
            }
        }
    }
    let mut signature = [0; 64];
    signature.copy_from_slice(&b[..64]);
    let mut signer = [0; 32];
    signer.copy_from_slice(&b[64..96]);
    let mut recent_hash = [0; 32];
    recent_hash.copy_from_slice(&b[96..128]);
    Ok(Tx {
        signature,
        message: Message {
            signer,
            recent_hash,
            fee: u64_at(b, 128),
            kind,
            accounts,
        },
    })
}

/// The parts of encoded transaction `b` a signature check reads: the signer's key
/// bytes, the signature and the signed message; `None` when `b` is too short.
pub fn signed(b: &[u8]) -> Option<Signed<'_>> {
    if b.len() < HEADER_LEN {
        return None;
    }
    Some(Signed {
        key: b[64..96].try_into().expect("32 bytes"),
        sig: b[..SIG_LEN].try_into().expect("64 bytes"),
        msg: &b[MSG_OFFSET..],
    })
}

/// Verifies the signature of encoded transaction `b` against `key` (the signer field,
/// already decompressed by the caller, which may cache keys), by the rule of
/// [`crate::sig`] (ZIP 215).
pub fn verify_with(b: &[u8], key: &SignerKey) -> bool {
    signed(b).is_some_and(|s| key.verifies(s.msg, s.sig))
}

/// Verifies the signature of encoded transaction `b` against its own signer field
/// (ZIP 215, [`crate::sig`]).
pub fn verify(b: &[u8]) -> bool {
    signed(b).is_some_and(|s| sig::verify(s.key, s.msg, s.sig))
}

/// [`verify`] with the signer's key looked up in (or added to) `keys`, decompressed once
/// per signer rather than once per transaction.
pub fn verify_cached(b: &[u8], keys: &mut sig::SignerKeys) -> bool {
    signed(b).is_some_and(|s| keys.get(s.key).is_some_and(|k| k.verifies(s.msg, s.sig)))
}

/// Verifies many encoded transactions as one batch where it can ([`sig::verify_batch`]):
/// `out[i]` is exactly [`verify`]`(txs[i])`, a too-short transaction is false.
pub fn verify_many<B: AsRef<[u8]>>(txs: &[B], out: &mut Vec<bool>) {
    let parts: Vec<Option<Signed>> = txs.iter().map(|b| signed(b.as_ref())).collect();
    let whole: Vec<Signed> = parts.iter().flatten().copied().collect();
    let mut checked = Vec::with_capacity(whole.len());
    sig::verify_batch(&whole, &mut checked);
    let mut checked = checked.into_iter();
    out.clear();
    out.extend(
        parts
            .iter()
            .map(|p| p.is_some() && checked.next().expect("one answer per item")),
    );
}

/// The signature of an encoded transaction as a 128-bit tag (its first 16 bytes): the
/// dedup key. Ed25519 signatures are uniformly distributed, so tags of distinct
/// transactions collide with probability ~2^-128 per pair.
pub fn sig_tag(b: &[u8]) -> u128 {
    let mut t = [0u8; 16];
    let n = b.len().min(16);
    t[..n].copy_from_slice(&b[..n]);
    u128::from_le_bytes(t)
}

/// Builds [`TagHasher`]s with one random key per process: the hasher of maps and sets
/// keyed by [`sig_tag`] ([`TagMap`], [`TagSet`]).
///
/// A node looks a transaction's tag up in every block of its replay window (up to 256
/// maps per transaction) and in its mempool: with std's SipHash those lookups were a
/// large part of validating a block. A tag is already the start of an Ed25519
/// signature, close to uniform, so one keyed multiply-and-fold spreads it; the key,
/// random per process, keeps a signer who grinds signature nonces from aiming tags at
/// one bucket of a node's tables.
#[derive(Debug, Clone, Copy)]
pub struct TagHasherBuilder(u64);

impl Default for TagHasherBuilder {
    fn default() -> Self {
        use std::hash::BuildHasher;
        TagHasherBuilder(std::collections::hash_map::RandomState::new().hash_one(0x7a67u64))
    }
}

impl std::hash::BuildHasher for TagHasherBuilder {
    type Hasher = TagHasher;
    fn build_hasher(&self) -> TagHasher {
        TagHasher {
            key: self.0,
            state: 0,
        }
    }
}

/// The hasher of [`TagHasherBuilder`].
#[derive(Debug, Clone, Copy)]
pub struct TagHasher {
    key: u64,
    state: u64,
}

impl TagHasher {
    fn mix(&mut self, v: u64) {
        let x = (self.state ^ v ^ self.key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.state = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
}

impl std::hash::Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.state ^ (self.state >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(w));
        }
    }
    fn write_u128(&mut self, v: u128) {
        self.mix(v as u64);
        self.mix((v >> 64) as u64);
    }
}

/// A map keyed by signature tags ([`sig_tag`]), hashed by [`TagHasher`].
pub type TagMap<V> = std::collections::HashMap<u128, V, TagHasherBuilder>;
/// A set of signature tags ([`sig_tag`]), hashed by [`TagHasher`].
pub type TagSet = std::collections::HashSet<u128, TagHasherBuilder>;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tag_maps_find_what_they_hold_and_spread_tags() {
        use std::hash::BuildHasher;
        let tag = |i: u128| i.wrapping_mul(0x2545_F491_4F6C_DD1D_9E37_79B9_7F4A_7C15);
        let mut m: TagMap<u128> = TagMap::default();
        for i in 0..10_000 {
            m.insert(tag(i), i);
        }
        assert!((0..10_000).all(|i| m.get(&tag(i)) == Some(&i)));
        assert!((10_000..11_000).all(|i| !m.contains_key(&tag(i))));
        // Tags differing in one bit land in different buckets of a 1024-bucket table.
        let b = TagHasherBuilder::default();
        let buckets: std::collections::HashSet<u64> =
            (0..128u32).map(|k| b.hash_one(1u128 << k) & 1023).collect();
        assert!(buckets.len() > 100, "{} buckets", buckets.len());
    }

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[7; 32])
    }

    fn arb_message() -> impl Strategy<Value = Message> {
        (
            any::<[u8; 32]>(),
            any::<u64>(),
            any::<bool>(),
            0..=MAX_BUDGET,
            proptest::collection::vec((0u32..WRITABLE, any::<bool>()), 1..=MAX_ACCOUNTS),
        )
            .prop_map(|(recent_hash, fee, transfer, v, accts)| {
                let mut accounts: Vec<AccountRef> = accts
                    .into_iter()
                    .map(|(index, writable)| AccountRef { index, writable })
                    .collect();
                accounts[0].writable = true;
                let kind = if transfer && accounts.len() >= 2 {
                    accounts[1].writable = true;
                    if accounts[1].index == accounts[0].index {
                        accounts[1].index = accounts[0].index ^ 1;
                    }
                    TxKind::Transfer { amount: v }
                } else {
                    TxKind::Script { budget: v }
                };
                Message {
                    signer: key().verifying_key().to_bytes(),
                    recent_hash,
                    fee,
                    kind,
                    accounts,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 8 } else { 128 }))]
        #[test]
        fn encode_decode_round_trip(m in arb_message()) {
            let b = m.sign(&key());
            prop_assert_eq!(b.len(), HEADER_LEN + 4 * m.accounts.len());
            let tx = decode(&b).unwrap();
            prop_assert_eq!(&tx.message, &m);
            prop_assert!(verify(&b));
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&b);
            let _ = verify(&b);
            let _ = sig_tag(&b);
        }

        #[test]
        fn any_flipped_bit_breaks_the_signature(m in arb_message(), bit in 0usize..(HEADER_LEN * 8)) {
            let mut b = m.sign(&key());
            b[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(!verify(&b));
        }

        /// A block's worth of transactions checked as a batch gets, per transaction,
        /// single verification's answer: flipped bits and short ones are refused in place.
        #[test]
        fn many_answers_as_one_by_one(
            txs in proptest::collection::vec((arb_message(), 0usize..3, 0usize..(HEADER_LEN * 8)), 0..24),
        ) {
            let encoded: Vec<Vec<u8>> = txs
                .iter()
                .map(|(m, damage, bit)| {
                    let mut b = m.sign(&key());
                    match damage {
                        0 => {}
                        1 => b[bit / 8] ^= 1 << (bit % 8),
                        _ => b.truncate(bit / 8 % HEADER_LEN),
                    }
                    b
                })
                .collect();
            let mut out = Vec::new();
            verify_many(&encoded, &mut out);
            let single: Vec<bool> = encoded.iter().map(|b| verify(b)).collect();
            prop_assert_eq!(&out, &single);
            for ((_, damage, _), ok) in txs.iter().zip(&out) {
                prop_assert_eq!(*ok, *damage == 0);
            }
        }
    }

    #[test]
    fn cached_keys_judge_every_signature_as_the_plain_check_does() {
        let g = crate::bank::fund_initial_accounts(8, 1_000, 1);
        let mut keys = sig::SignerKeys::new();
        let txs = crate::bank::transfer_block(&g, 40, 2);
        for t in &txs {
            assert!(verify_cached(t, &mut keys) && verify(t));
        }
        for t in &txs {
            // A flipped message byte, then a flipped signature byte: both refused,
            // with the signer's key already cached.
            let mut bad = t.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(!verify_cached(&bad, &mut keys) && !verify(&bad));
            let mut bad = t.clone();
            bad[3] ^= 1;
            assert!(!verify_cached(&bad, &mut keys) && !verify(&bad));
        }
        assert!(!verify_cached(&txs[0][..50], &mut keys), "too short");
    }

    #[test]
    fn a_transfer_is_154_bytes_and_malformed_ones_are_refused() {
        let mut m = Message {
            signer: key().verifying_key().to_bytes(),
            recent_hash: [1; 32],
            fee: 5,
            kind: TxKind::Transfer { amount: 9 },
            accounts: vec![
                AccountRef {
                    index: 3,
                    writable: true,
                },
                AccountRef {
                    index: 4,
                    writable: true,
                },
            ],
        };
        let b = m.sign(&key());
        assert_eq!(b.len(), 154);
        assert_eq!(decode(&b[..150]), Err(DecodeError::Truncated(150)));
        let mut long = b.clone();
        long.push(0);
        assert_eq!(decode(&long), Err(DecodeError::Trailing(1)));
        m.accounts[1].index = 3;
        assert!(matches!(
            decode(&m.sign(&key())),
            Err(DecodeError::Malformed(_))
        ));
        let mut bad_kind = b.clone();
        bad_kind[136] = 9;
        assert_eq!(decode(&bad_kind), Err(DecodeError::Kind(9)));
    }
}
