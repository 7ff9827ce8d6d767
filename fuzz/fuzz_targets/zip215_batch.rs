//! Differential: the ZIP 215 batch check and the single check agree on every input
//! (dyno-txn's `sig`, the rule every signature in dyno goes through). The input builds a
//! few signatures: honest ones, then altered (bits flipped in R, S or the key; R or the
//! key swapped for a small-order point; S pushed to a non-canonical value; the message
//! changed), or taken raw from the input.
#![no_main]

use dyno_txn::sig::{self, Signed};
use ed25519_dalek::{Signer, SigningKey};
use libfuzzer_sys::fuzz_target;

/// Encodings of points of small order (the identity, points of order 2, 4 and 8, and
/// non-canonical encodings of some of them): what a crafted signature puts in R or A.
const SMALL_ORDER: [[u8; 32]; 6] = [
    // identity (y = 1)
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    // order 2 (y = -1)
    [
        0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0x7f,
    ],
    // order 4 (y = 0)
    [0; 32],
    // order 8
    [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef,
        0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88,
        0x6d, 0x53, 0xfc, 0x05,
    ],
    // the identity with y = 1 + p (non-canonical)
    [
        0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0x7f,
    ],
    // order 4 with the sign bit set (x = 0 and negative: non-canonical)
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0x80,
    ],
];

/// The group order l, little-endian: S = l is the smallest non-canonical S.
const L: [u8; 32] = [
    0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde,
    0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
];

struct Item {
    key: [u8; 32],
    sig: [u8; 64],
    msg: Vec<u8>,
}

fn take<'a>(data: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if data.len() < n {
        return None;
    }
    let (a, b) = data.split_at(n);
    *data = b;
    Some(a)
}

fn item(data: &mut &[u8]) -> Option<Item> {
    let op = take(data, 1)?[0];
    let msg_len = usize::from(take(data, 1)?[0] % 48);
    let msg = take(data, msg_len)?.to_vec();
    if op % 8 == 7 {
        // Raw bytes: a key and a signature straight from the input.
        let key: [u8; 32] = take(data, 32)?.try_into().ok()?;
        let sig: [u8; 64] = take(data, 64)?.try_into().ok()?;
        return Some(Item { key, sig, msg });
    }
    let seed = take(data, 1)?[0];
    let signer = SigningKey::from_bytes(&[seed; 32]);
    let mut key = signer.verifying_key().to_bytes();
    let mut sig = signer.sign(&msg).to_bytes();
    let arg = take(data, 1).map_or(0, |b| b[0]);
    let mut msg = msg;
    match op % 8 {
        0 => {}
        1 => sig[usize::from(arg) % 64] ^= 1 << (arg % 8),
        2 => key[usize::from(arg) % 32] ^= 1 << (arg % 8),
        3 => sig[..32].copy_from_slice(&SMALL_ORDER[usize::from(arg) % SMALL_ORDER.len()]),
        4 => key = SMALL_ORDER[usize::from(arg) % SMALL_ORDER.len()],
        5 => {
            // S + l: the same scalar, not canonical (ZIP 215 refuses it).
            let mut carry = 0u16;
            for i in 0..32 {
                let v = u16::from(sig[32 + i]) + u16::from(L[i]) + carry;
                sig[32 + i] = v as u8;
                carry = v >> 8;
            }
        }
        _ => msg.push(arg),
    }
    Some(Item { key, sig, msg })
}

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let mut items = Vec::new();
    while items.len() < 16 {
        match item(&mut rest) {
            Some(i) => items.push(i),
            None => break,
        }
    }
    let signed: Vec<Signed<'_>> = items
        .iter()
        .map(|i| Signed { key: &i.key, sig: &i.sig, msg: &i.msg })
        .collect();
    let single: Vec<bool> = items
        .iter()
        .map(|i| sig::verify(&i.key, &i.msg, &i.sig))
        .collect();
    let mut batch = Vec::new();
    sig::verify_batch(&signed, &mut batch);
    assert_eq!(batch, single, "the batch check and the single check disagree");
});
