//! The one Ed25519 acceptance rule of the reference node: ZIP 215, for single and batch
//! verification alike.
//!
//! # Why ZIP 215, and why ed25519-zebra
//! Ed25519 implementations disagree on edge cases: whether the verification equation is
//! cofactored (`[8][s]B = [8]R + [8][k]A`) or not (`[s]B = R + [k]A`), and whether
//! non-canonical encodings of `A` and `R` are allowed. ed25519-dalek's single `verify`
//! is cofactorless while its `verify_batch` is cofactored, so a signature built with a
//! small-order component can pass a batch and fail alone (or the reverse): a node that
//! batches and a node that does not would then disagree on a block. ZIP 215 (Zcash)
//! fixes one rule that batch verification can implement exactly: `S` must be canonical
//! (`< l`); `A` and `R` may be any encoding that decompresses, canonical or not; the
//! equation is the cofactored one. ed25519-zebra implements that rule for both its single
//! and its batch verifier (the Zcash consensus crate, audited, on curve25519-dalek as
//! dyno already is), so every check in dyno (the node's ingress verify tiles, a
//! follower's replay of a block, a block's seal, the pipeline's verify tiles, `dyno
//! machine`'s verify metrics) goes through this module and takes one answer.
//!
//! Signing is unchanged (ed25519-dalek): an honestly made signature verifies under either
//! rule; only crafted edge cases differ, and they now differ nowhere inside dyno.
//!
//! A batch that fails says only that some signature in it is bad; [`verify_batch`] then
//! checks each one alone, so its per-item answers equal single verification's (the
//! property the tests hold it to, with small-order and non-canonical inputs mixed in).

use std::collections::HashMap;

use ed25519_zebra::{batch, Signature, VerificationKey, VerificationKeyBytes};

/// A signer's public key, decompressed (a square root on the curve, a good part of a
/// check): keep one per signer rather than per signature.
#[derive(Debug, Clone, Copy)]
pub struct SignerKey(VerificationKey);

impl SignerKey {
    /// The key encoded by `bytes`, or `None` when they encode no curve point (ZIP 215
    /// accepts non-canonical encodings that decompress).
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<SignerKey> {
        VerificationKey::try_from(*bytes).ok().map(SignerKey)
    }

    /// Whether `sig` signs `msg` under this key (ZIP 215).
    pub fn verifies(&self, msg: &[u8], sig: &[u8; 64]) -> bool {
        self.0.verify(&Signature::from_bytes(sig), msg).is_ok()
    }
}

/// Whether `sig` signs `msg` under the key encoded by `key` (ZIP 215); false when the key
/// does not decompress.
pub fn verify(key: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> bool {
    SignerKey::from_bytes(key).is_some_and(|k| k.verifies(msg, sig))
}

/// One signature to check: the signer's key bytes, the signature, the signed message.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    /// The signer's public key as encoded.
    pub key: &'a [u8; 32],
    /// The signature (`R || S`).
    pub sig: &'a [u8; 64],
    /// The signed bytes.
    pub msg: &'a [u8],
}

/// Checks every item, as a batch where it can: one multiscalar multiplication for the
/// whole batch (random coefficients from the OS, so no one can craft a batch that passes
/// with a bad member); when the batch fails, each item is checked alone to find which.
/// `out[i]` is exactly what [`verify`] answers for `items[i]`.
pub fn verify_batch(items: &[Signed<'_>], out: &mut Vec<bool>) {
    out.clear();
    if items.len() == 1 {
        let s = &items[0];
        out.push(verify(s.key, s.msg, s.sig));
        return;
    }
    let mut verifier = batch::Verifier::new();
    for s in items {
        verifier.queue((
            VerificationKeyBytes::from(*s.key),
            Signature::from_bytes(s.sig),
            s.msg,
        ));
    }
    if items.is_empty() || verifier.verify(rand_core::OsRng).is_ok() {
        out.resize(items.len(), true);
        return;
    }
    out.extend(items.iter().map(|s| verify(s.key, s.msg, s.sig)));
}

/// Most keys a [`SignerKeys`] keeps; past it the cache starts over (a load signed by
/// more accounts than this only pays the decompression again).
pub const SIGNER_KEYS: usize = 1 << 16;

/// Decompressed signer keys by their 32 bytes. A load's transactions come from a few
/// thousand accounts, so nearly every check finds its key here.
#[derive(Debug, Default)]
pub struct SignerKeys {
    keys: HashMap<[u8; 32], SignerKey>,
}

impl SignerKeys {
    /// No key yet.
    pub fn new() -> SignerKeys {
        SignerKeys::default()
    }

    /// The key encoded by `bytes`, decompressed once; `None` when it encodes no point.
    pub fn get(&mut self, bytes: &[u8; 32]) -> Option<SignerKey> {
        if let Some(k) = self.keys.get(bytes) {
            return Some(*k);
        }
        let k = SignerKey::from_bytes(bytes)?;
        if self.keys.len() >= SIGNER_KEYS {
            self.keys.clear();
        }
        self.keys.insert(*bytes, k);
        Some(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};
    use proptest::prelude::*;

    /// The encoding of the identity point (y = 1), a small-order point.
    const IDENTITY: [u8; 32] = {
        let mut b = [0; 32];
        b[0] = 1;
        b
    };

    /// y = p + 1, a non-canonical encoding of the identity (p = 2^255 - 19).
    const IDENTITY_NON_CANONICAL: [u8; 32] = {
        let mut b = [0xff; 32];
        b[0] = 0xee;
        b[31] = 0x7f;
        b
    };

    /// A point of order 2: (0, -1), y = p - 1.
    const ORDER_TWO: [u8; 32] = {
        let mut b = [0xff; 32];
        b[0] = 0xec;
        b[31] = 0x7f;
        b
    };

    /// The kinds of item the agreement property mixes.
    #[derive(Debug, Clone, Copy)]
    enum Kind {
        Valid,
        /// A valid signature with one message byte flipped.
        WrongMessage,
        /// A valid signature with `S + l` (non-canonical scalar): refused by ZIP 215.
        NonCanonicalS,
        /// Key and R of small order with S = 0: the cofactored equation holds, the
        /// cofactorless one need not.
        SmallOrder([u8; 32], [u8; 32]),
        /// Bytes that encode no point as the key.
        NotAPoint,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        let small = prop::sample::select(vec![IDENTITY, IDENTITY_NON_CANONICAL, ORDER_TWO]);
        prop_oneof![
            4 => Just(Kind::Valid),
            1 => Just(Kind::WrongMessage),
            1 => Just(Kind::NonCanonicalS),
            1 => (small.clone(), small).prop_map(|(a, r)| Kind::SmallOrder(a, r)),
            1 => Just(Kind::NotAPoint),
        ]
    }

    /// The group order l, little-endian.
    const L: [u8; 32] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
        0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ];

    fn add_l(s: &mut [u8]) -> bool {
        let mut carry = 0u16;
        for (b, l) in s.iter_mut().zip(L) {
            let v = *b as u16 + l as u16 + carry;
            *b = v as u8;
            carry = v >> 8;
        }
        carry == 0
    }

    /// (key, sig, msg) of one item of `kind`, signer `seed`.
    fn make(kind: Kind, seed: u8, msg: &[u8]) -> ([u8; 32], [u8; 64], Vec<u8>) {
        let sk = SigningKey::from_bytes(&[seed; 32]);
        let key = sk.verifying_key().to_bytes();
        let mut sig = sk.sign(msg).to_bytes();
        let mut msg = msg.to_vec();
        match kind {
            Kind::Valid => {}
            Kind::WrongMessage => msg[0] ^= 1,
            Kind::NonCanonicalS => {
                assert!(add_l(&mut sig[32..]), "S + l fits in 256 bits");
            }
            Kind::SmallOrder(a, r) => {
                sig = [0; 64];
                sig[..32].copy_from_slice(&r);
                return (a, sig, msg);
            }
            Kind::NotAPoint => return (not_a_point(), sig, msg),
        }
        (key, sig, msg)
    }

    /// The smallest y >= 2 that is the y of no curve point.
    fn not_a_point() -> [u8; 32] {
        (2u8..)
            .map(|y| {
                let mut k = [0; 32];
                k[0] = y;
                k
            })
            .find(|k| SignerKey::from_bytes(k).is_none())
            .expect("half of all y have no point")
    }

    #[test]
    fn the_rule_is_zip_215() {
        let msg = b"dyno";
        let (k, s, m) = make(Kind::Valid, 1, msg);
        assert!(verify(&k, &m, &s), "an honest signature verifies");
        let (k, s, m) = make(Kind::WrongMessage, 1, msg);
        assert!(!verify(&k, &m, &s), "a changed message does not");
        let (k, s, m) = make(Kind::NonCanonicalS, 1, msg);
        assert!(!verify(&k, &m, &s), "S >= l is refused");
        for a in [IDENTITY, IDENTITY_NON_CANONICAL, ORDER_TWO] {
            for r in [IDENTITY, IDENTITY_NON_CANONICAL, ORDER_TWO] {
                let (k, s, m) = make(Kind::SmallOrder(a, r), 1, msg);
                assert!(
                    verify(&k, &m, &s),
                    "small-order A and R, S = 0: cofactored holds"
                );
            }
        }
        let (k, s, m) = make(Kind::NotAPoint, 1, msg);
        assert!(!verify(&k, &m, &s), "a key that is no point is refused");
        assert!(SignerKey::from_bytes(&IDENTITY_NON_CANONICAL).is_some());
    }

    #[test]
    fn the_cache_answers_like_a_fresh_key() {
        let mut keys = SignerKeys::new();
        for seed in 0..4u8 {
            let (k, s, m) = make(Kind::Valid, seed, b"cached");
            for _ in 0..2 {
                assert!(keys.get(&k).expect("a point").verifies(&m, &s));
            }
        }
        assert_eq!(keys.keys.len(), 4);
        assert!(keys.get(&not_a_point()).is_none());
        assert_eq!(keys.keys.len(), 4, "a key that is no point is not kept");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 64 }))]

        /// A batch never accepts what single verification refuses, nor the reverse,
        /// whatever mix of honest, wrong, non-canonical and small-order items it holds.
        #[test]
        fn batch_answers_as_single_verification(
            kinds in prop::collection::vec((kind(), 0u8..8), 0..40),
        ) {
            let items: Vec<_> = kinds
                .iter()
                .enumerate()
                .map(|(i, (k, seed))| make(*k, *seed, format!("tx {i}").as_bytes()))
                .collect();
            let signed: Vec<Signed> = items
                .iter()
                .map(|(key, sig, msg)| Signed { key, sig, msg })
                .collect();
            let mut out = Vec::new();
            verify_batch(&signed, &mut out);
            let single: Vec<bool> = signed.iter().map(|s| verify(s.key, s.msg, s.sig)).collect();
            prop_assert_eq!(&out, &single);
            for ((kind, _), ok) in kinds.iter().zip(&out) {
                let expected = matches!(kind, Kind::Valid | Kind::SmallOrder(..));
                prop_assert_eq!(*ok, expected, "{:?}", kind);
            }
        }
    }
}
