//! Signature checks with the signers' public keys kept decompressed: a key is
//! decompressed (a square root on the curve, a good part of a check) once per signer,
//! not once per transaction, as the pipeline's verify tile does. A load's transactions
//! come from a few thousand accounts, so nearly every check finds its key.

use std::collections::HashMap;

use ed25519_dalek::VerifyingKey;

use dyno_txn::tx;

/// Most keys kept; past it the cache starts over (a load signed by more accounts
/// than this only pays the decompression again).
pub const SIGNER_KEYS: usize = 1 << 16;

/// Decompressed public keys by their 32 bytes.
#[derive(Debug, Default)]
pub struct SignerKeys {
    keys: HashMap<[u8; 32], VerifyingKey>,
}

impl SignerKeys {
    /// No key yet.
    pub fn new() -> SignerKeys {
        SignerKeys::default()
    }

    /// [`tx::verify`]: the signature of encoded transaction `b` against its own
    /// signer field, with that signer's key decompressed once.
    pub fn verify(&mut self, b: &[u8]) -> bool {
        let Some(pk) = b.get(64..96).and_then(|p| <[u8; 32]>::try_from(p).ok()) else {
            return false;
        };
        let key = match self.keys.get(&pk) {
            Some(k) => *k,
            None => {
                let Ok(k) = VerifyingKey::from_bytes(&pk) else {
                    return false;
                };
                if self.keys.len() >= SIGNER_KEYS {
                    self.keys.clear();
                }
                self.keys.insert(pk, k);
                k
            }
        };
        tx::verify_with(b, &key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_txn::bank::{fund_initial_accounts, transfer_block};

    #[test]
    fn cached_keys_judge_every_signature_as_the_plain_check_does() {
        let g = fund_initial_accounts(8, 1_000, 1);
        let mut keys = SignerKeys::new();
        let txs = transfer_block(&g, 40, 2);
        for t in &txs {
            assert!(keys.verify(t) && tx::verify(t));
        }
        assert!(keys.keys.len() <= 8, "one key per signer");
        for t in &txs {
            // A flipped message byte, then a flipped signature byte: both refused,
            // with the signer's key already cached.
            let mut bad = t.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(!keys.verify(&bad) && !tx::verify(&bad));
            let mut bad = t.clone();
            bad[3] ^= 1;
            assert!(!keys.verify(&bad) && !tx::verify(&bad));
        }
        assert!(!keys.verify(&txs[0][..50]), "too short");
    }
}
