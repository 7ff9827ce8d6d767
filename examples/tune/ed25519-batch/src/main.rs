//! A benchmark binary for `dyno tune`: verifies batches of Ed25519 signatures with
//! `ed25519_dalek::verify_batch` (the check a validator runs over a block's transactions)
//! and prints the rate as JSON: `{"batch_verify_per_s": .., "signatures": .., ...}`.
//!
//! ```text
//! ed25519-batch [SIGNATURES] [BATCH] [SEED] [SECONDS]
//! ```
//! defaults 4096 signatures, batches of 64, seed 1, at least 2 s of verification. Messages
//! (32 to 512 bytes) and keys come from the seed, so a training run with another seed and
//! batch size exercises the same code on an input the measured run does not use.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::time::{Duration, Instant};

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .nth(n)
        .map(|a| match a.parse() {
            Ok(v) => v,
            Err(_) => {
                eprintln!("argument {n}: {a:?} is not a non-negative integer");
                std::process::exit(2)
            }
        })
        .unwrap_or(default)
}

fn main() {
    let count = arg(1, 4096).max(1) as usize;
    let batch = arg(2, 64).max(1) as usize;
    let seed = arg(3, 1);
    let seconds = arg(4, 2);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    // A few hundred signers, as in a block where accounts sign several transactions.
    let signers: Vec<SigningKey> = (0..256).map(|_| SigningKey::generate(&mut rng)).collect();
    let mut messages: Vec<Vec<u8>> = Vec::with_capacity(count);
    let mut signatures: Vec<Signature> = Vec::with_capacity(count);
    let mut keys: Vec<VerifyingKey> = Vec::with_capacity(count);
    for _ in 0..count {
        let signer = &signers[(rng.next_u32() as usize) % signers.len()];
        let mut msg = vec![0u8; 32 + (rng.next_u32() as usize % 481)];
        rng.fill_bytes(&mut msg);
        signatures.push(signer.sign(&msg));
        keys.push(signer.verifying_key());
        messages.push(msg);
    }
    let started = Instant::now();
    let mut verified: u64 = 0;
    while started.elapsed() < Duration::from_secs(seconds) || verified == 0 {
        for start in (0..count).step_by(batch) {
            let end = (start + batch).min(count);
            let msgs: Vec<&[u8]> = messages[start..end].iter().map(Vec::as_slice).collect();
            if let Err(e) =
                ed25519_dalek::verify_batch(&msgs, &signatures[start..end], &keys[start..end])
            {
                eprintln!("batch {start}..{end} failed to verify: {e}");
                std::process::exit(1);
            }
            verified += (end - start) as u64;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{{\"batch_verify_per_s\": {}, \"signatures\": {verified}, \"batch\": {batch}, \"seed\": {seed}, \"seconds\": {elapsed}}}",
        verified as f64 / elapsed
    );
}
