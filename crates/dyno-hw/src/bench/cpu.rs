//! CPU benchmarks: hashing and signature verification.

use super::{seeded_rng, Benchmark, Context, Execution};
use crate::harness::{Combine, Workload};
use crate::{HwError, MetricId};
use rand_core::RngCore;
use std::hint::black_box;

/// Substrate hashes 32 KiB per iteration: large enough to approach the hasher's speed,
/// small enough to stay in cache. Part of the comparability contract.
const BLAKE2_INPUT: usize = 32 * 1024;

/// BLAKE2b-256 over 32 KiB of 0x66, as `sp_crypto_hashing::blake2_256` computes it.
pub struct Blake2;

/// Working state of [`Blake2`].
pub struct Blake2Workload {
    buffer: Vec<u8>,
}

impl Workload for Blake2Workload {
    fn work_per_iteration(&self) -> f64 {
        BLAKE2_INPUT as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        let hash = blake2b_simd::Params::new()
            .hash_length(32)
            .hash(black_box(&self.buffer));
        black_box(hash);
        Ok(())
    }
}

impl Blake2 {
    fn workload() -> Box<dyn Workload> {
        Box::new(Blake2Workload {
            buffer: vec![0x66; BLAKE2_INPUT],
        })
    }
}

impl Benchmark for Blake2 {
    fn id(&self) -> MetricId {
        MetricId::Blake2256
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        Ok(Self::workload())
    }
}

/// BLAKE2-256 on `parallel_cores` unpinned threads at once; the score is the average
/// per-thread throughput, as upstream, so it reads as a per-core figure.
pub struct Blake2Parallel;

impl Benchmark for Blake2Parallel {
    fn id(&self) -> MetricId {
        MetricId::Blake2256Parallel
    }
    fn execution(&self, ctx: &Context) -> Execution {
        Execution::Parallel {
            threads: ctx.parallel_cores,
            combine: Combine::Average,
        }
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        Ok(Blake2::workload())
    }
}

/// Substrate verifies 2048 signatures of 32-byte messages per iteration and counts 32
/// bytes per signature, so KiB/s = verifications/s * 32 / 1024.
const SR25519_SIGNATURES: usize = 2048;
const SR25519_MESSAGE: usize = 32;
/// Substrate's signing context.
const SUBSTRATE_CONTEXT: &[u8] = b"substrate";
/// The mini secret key of the development account `//Alice` (published by `subkey
/// inspect //Alice`). Verification cost does not depend on the key; it is fixed so that
/// the work is the same as upstream's byte for byte except the signatures' randomness.
pub(crate) const ALICE_SEED: [u8; 32] = [
    0xe5, 0xbe, 0x9a, 0x50, 0x92, 0xb8, 0x1b, 0xca, 0x64, 0xbe, 0x81, 0xd2, 0x12, 0xe7, 0xf2, 0xf9,
    0xeb, 0xa1, 0x83, 0xbb, 0x7a, 0x90, 0x95, 0x4f, 0x7b, 0x76, 0x36, 0x1f, 0x6e, 0xdb, 0x5c, 0x0a,
];

/// sr25519 verification exactly as a Substrate node runs it: through the host function
/// `sp_io::crypto::sr25519_verify`, which is `sp_core::sr25519::Pair::verify`.
pub struct Sr25519;

/// Working state of [`Sr25519`]. Signatures and the public key are kept as the bytes a
/// node receives (sp-core's `Signature` and `Public` are plain byte arrays), because
/// parsing them is part of every verification a node does and so part of the score.
pub struct Sr25519Workload {
    pair: schnorrkel::Keypair,
    messages: Vec<[u8; SR25519_MESSAGE]>,
    signatures: Vec<[u8; schnorrkel::SIGNATURE_LENGTH]>,
}

/// Alice's sr25519 key pair, expanded as Substrate does (ed25519 expansion mode).
pub(crate) fn alice() -> Result<schnorrkel::Keypair, HwError> {
    let mini = schnorrkel::MiniSecretKey::from_bytes(&ALICE_SEED)
        .map_err(|e| HwError::Failed(format!("sr25519 key: {e}")))?;
    Ok(mini.expand_to_keypair(schnorrkel::ExpansionMode::Ed25519))
}

/// One verification on sp-core's path: parse the 64-byte signature (scalar canonicity and
/// the schnorrkel marker bit), decompress the 32-byte Ristretto public key, then
/// `verify_simple` under the `substrate` context. A malformed input is `false`, as there.
pub fn sr25519_verify(
    signature: &[u8; schnorrkel::SIGNATURE_LENGTH],
    message: &[u8],
    public: &[u8; schnorrkel::PUBLIC_KEY_LENGTH],
) -> bool {
    let Ok(signature) = schnorrkel::Signature::from_bytes(signature) else {
        return false;
    };
    let Ok(public) = schnorrkel::PublicKey::from_bytes(public) else {
        return false;
    };
    public
        .verify_simple(SUBSTRATE_CONTEXT, message, &signature)
        .is_ok()
}

impl Benchmark for Sr25519 {
    fn id(&self) -> MetricId {
        MetricId::Sr25519Verify
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        let pair = alice()?;
        let mut rng = seeded_rng();
        let mut messages = Vec::with_capacity(SR25519_SIGNATURES);
        let mut signatures = Vec::with_capacity(SR25519_SIGNATURES);
        for _ in 0..SR25519_SIGNATURES {
            let mut msg = [0u8; SR25519_MESSAGE];
            rng.fill_bytes(&mut msg);
            signatures.push(pair.sign_simple(SUBSTRATE_CONTEXT, &msg).to_bytes());
            messages.push(msg);
        }
        Ok(Box::new(Sr25519Workload {
            pair,
            messages,
            signatures,
        }))
    }
}

impl Workload for Sr25519Workload {
    fn work_per_iteration(&self) -> f64 {
        (SR25519_SIGNATURES * SR25519_MESSAGE) as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        for (msg, sig) in self.messages.iter().zip(&self.signatures) {
            // Upstream takes `pair.public()` anew for every call: the compressed bytes,
            // which the verifier then has to decompress.
            let public = self.pair.public.to_bytes();
            let ok = sr25519_verify(black_box(sig), black_box(msg), black_box(&public));
            black_box(ok);
        }
        Ok(())
    }
}

/// Ed25519 signatures per iteration (both single and batch modes).
const ED25519_SIGNATURES: usize = 1024;

/// Distinct signers, signature `i` by signer `i % ED25519_SIGNERS`: a batch of 64 holds 64
/// different keys, as a node's batches of a load from many accounts do (ed25519-zebra
/// merges the terms of one key within a batch, so one signer would flatter batching).
const ED25519_SIGNERS: usize = ED25519_BATCH;
/// Batch size for batch verification: large enough to get most of the batching gain,
/// small enough to match how a verify tile batches a burst of transactions.
const ED25519_BATCH: usize = 64;

/// Ed25519 verification by the reference node's rule (ZIP 215, `dyno_txn::sig`: the
/// check its ingress verify tiles and followers apply, so a node's per-tile rate compares
/// with this one), one signature at a time with the signer's key decompressed once, or in
/// batches of 64; the score is signatures per second.
pub struct Ed25519 {
    /// Verify in batches of 64 (`ED25519_BATCH`) instead of one by one.
    pub batch: bool,
}

/// Working state of [`Ed25519`].
pub struct Ed25519Workload {
    batch: bool,
    keys: Vec<[u8; 32]>,
    signers: Vec<dyno_txn::sig::SignerKey>,
    messages: Vec<[u8; 32]>,
    signatures: Vec<[u8; 64]>,
}

impl Benchmark for Ed25519 {
    fn id(&self) -> MetricId {
        if self.batch {
            MetricId::Ed25519BatchVerify
        } else {
            MetricId::Ed25519Verify
        }
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        use ed25519_dalek::Signer;
        let mut rng = seeded_rng();
        let secrets: Vec<ed25519_dalek::SigningKey> = (0..ED25519_SIGNERS)
            .map(|_| {
                let mut seed = [0u8; 32];
                rng.fill_bytes(&mut seed);
                ed25519_dalek::SigningKey::from_bytes(&seed)
            })
            .collect();
        let mut messages = Vec::with_capacity(ED25519_SIGNATURES);
        let mut signatures = Vec::with_capacity(ED25519_SIGNATURES);
        for i in 0..ED25519_SIGNATURES {
            let mut msg = [0u8; 32];
            rng.fill_bytes(&mut msg);
            signatures.push(secrets[i % ED25519_SIGNERS].sign(&msg).to_bytes());
            messages.push(msg);
        }
        let keys: Vec<[u8; 32]> = secrets
            .iter()
            .map(|k| k.verifying_key().to_bytes())
            .collect();
        let signers = keys
            .iter()
            .map(|k| dyno_txn::sig::SignerKey::from_bytes(k).expect("a real key"))
            .collect();
        Ok(Box::new(Ed25519Workload {
            batch: self.batch,
            keys,
            signers,
            messages,
            signatures,
        }))
    }
}

impl Workload for Ed25519Workload {
    fn work_per_iteration(&self) -> f64 {
        ED25519_SIGNATURES as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        use dyno_txn::sig::{verify_batch, Signed};
        if self.batch {
            let mut items = Vec::with_capacity(ED25519_BATCH);
            let mut out = Vec::with_capacity(ED25519_BATCH);
            for start in (0..ED25519_SIGNATURES).step_by(ED25519_BATCH) {
                let end = start + ED25519_BATCH;
                items.clear();
                items.extend(
                    self.messages[start..end]
                        .iter()
                        .zip(&self.signatures[start..end])
                        .enumerate()
                        .map(|(i, (msg, sig))| Signed {
                            key: &self.keys[(start + i) % ED25519_SIGNERS],
                            sig,
                            msg,
                        }),
                );
                verify_batch(black_box(&items), &mut out);
                black_box(&out);
            }
        } else {
            for (i, (msg, sig)) in self.messages.iter().zip(&self.signatures).enumerate() {
                let signer = &self.signers[i % ED25519_SIGNERS];
                black_box(signer.verifies(black_box(msg), black_box(sig)));
            }
        }
        Ok(())
    }
}

/// Hashes per iteration of the chain: enough that the loop's clock read is noise.
const SHA_CHAIN_STEP: usize = 16 * 1024;

/// The proof-of-history chain: h = sha256(h) over 32-byte states, hashes per second.
/// sha2 picks the SHA-NI instructions at run time when the CPU has them.
pub struct Sha256Chain;

/// Working state of [`Sha256Chain`].
pub struct Sha256ChainWorkload {
    state: [u8; 32],
}

impl Benchmark for Sha256Chain {
    fn id(&self) -> MetricId {
        MetricId::Sha256Chain
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, _ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        Ok(Box::new(Sha256ChainWorkload { state: [0u8; 32] }))
    }
}

impl Sha256ChainWorkload {
    /// Advances the chain by `n` hashes.
    pub fn advance(state: [u8; 32], n: usize) -> [u8; 32] {
        use sha2::Digest;
        let mut h = state;
        for _ in 0..n {
            h = sha2::Sha256::digest(h).into();
        }
        h
    }
}

impl Workload for Sha256ChainWorkload {
    fn work_per_iteration(&self) -> f64 {
        SHA_CHAIN_STEP as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        self.state = black_box(Self::advance(black_box(self.state), SHA_CHAIN_STEP));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn alice_is_substrates_dev_account() {
        let pair = alice().unwrap();
        assert_eq!(
            hex(&pair.public.to_bytes()),
            "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d"
        );
    }

    #[test]
    fn sr25519_signatures_verify_under_the_substrate_context() {
        let ctx = Context::for_tests();
        let w = Sr25519.prepare(&ctx).unwrap();
        assert_eq!(
            w.work_per_iteration(),
            65_536.0,
            "32 bytes x 2048 signatures"
        );
        let pair = alice().unwrap();
        let sig = pair.sign_simple(SUBSTRATE_CONTEXT, b"m");
        assert!(pair
            .public
            .verify_simple(SUBSTRATE_CONTEXT, b"m", &sig)
            .is_ok());
        assert!(pair.public.verify_simple(b"other", b"m", &sig).is_err());
    }

    #[test]
    fn sr25519_verify_parses_like_sp_core() {
        let pair = alice().unwrap();
        let public = pair.public.to_bytes();
        let sig = pair.sign_simple(SUBSTRATE_CONTEXT, b"msg").to_bytes();
        assert!(sr25519_verify(&sig, b"msg", &public));
        assert!(!sr25519_verify(&sig, b"other message", &public));
        // Without schnorrkel's marker bit the signature does not parse: false, not a panic.
        let mut unmarked = sig;
        unmarked[63] &= 0x7f;
        assert!(!sr25519_verify(&unmarked, b"msg", &public));
        // Not every 32-byte string is a Ristretto point: decompression fails, false.
        let mut bad_key = public;
        bad_key[31] |= 0x80;
        assert!(!sr25519_verify(&sig, b"msg", &bad_key));
    }

    #[test]
    fn ed25519_workloads_hold_valid_signatures() {
        let ctx = Context::for_tests();
        for batch in [false, true] {
            let mut w = Ed25519 { batch }.prepare(&ctx).unwrap();
            assert_eq!(w.work_per_iteration(), ED25519_SIGNATURES as f64);
            w.iterate().unwrap();
        }
        // The prepared signatures really verify (a workload of failing checks would
        // measure the early-exit path, not verification).
        let mut rng = seeded_rng();
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let key = ed25519_dalek::SigningKey::from_bytes(&seed);
        let mut msg = [0u8; 32];
        rng.fill_bytes(&mut msg);
        use ed25519_dalek::Signer;
        let sig = key.sign(&msg).to_bytes();
        assert!(dyno_txn::sig::verify(
            &key.verifying_key().to_bytes(),
            &msg,
            &sig
        ));
    }

    #[test]
    fn sha_chain_matches_the_known_first_links() {
        // sha256 of 32 zero bytes, a published test value.
        let one = Sha256ChainWorkload::advance([0u8; 32], 1);
        assert_eq!(
            hex(&one),
            "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"
        );
        let two = Sha256ChainWorkload::advance(one, 1);
        assert_eq!(Sha256ChainWorkload::advance([0u8; 32], 2), two);
    }

    #[test]
    fn blake2_is_the_32_byte_variant() {
        let h = blake2b_simd::Params::new().hash_length(32).hash(b"");
        assert_eq!(
            hex(h.as_bytes()),
            "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"
        );
    }
}
