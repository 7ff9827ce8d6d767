//! PoH entries and the ledger file.
//!
//! # Entry (little-endian)
//!
//! ```text
//! offset  size  field
//!      0     8  slot
//!      8     8  num_hashes: SHA-256 iterations since the previous entry
//!     16    32  hash: the chain after those iterations (and the mixin, if any)
//!     48     1  kind: 0 = tick, 1 = microblock
//!     49    32  mixin: SHA-256 of the records (zero for a tick)
//!     81     4  record count n
//!     85  65*n  records: transaction signature (64) and status (1: 0 executed, 1 failed)
//! ```
//!
//! The ledger file is a sequence of `u32 length` + entry. Starting from the genesis
//! hash, each entry's hash must equal `sha256^num_hashes(prev)` for a tick, and
//! `sha256(sha256^num_hashes(prev) || mixin)` for a microblock, whose mixin must equal
//! the SHA-256 of its records. [`verify_ledger`] checks exactly that.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Bytes of an entry header.
pub const ENTRY_HEADER: usize = 85;
/// Bytes of one record.
pub const RECORD_LEN: usize = 65;

/// One hash-chain step.
#[inline]
pub fn hash_once(h: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(h).into()
}

/// Mixes `mixin` into the chain.
pub fn mix(h: &[u8; 32], mixin: &[u8; 32]) -> [u8; 32] {
    let mut s = Sha256::new();
    s.update(h);
    s.update(mixin);
    s.finalize().into()
}

/// An entry header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// Slot.
    pub slot: u64,
    /// Hashes since the previous entry.
    pub num_hashes: u64,
    /// Chain hash after this entry.
    pub hash: [u8; 32],
    /// Microblock (true) or tick.
    pub microblock: bool,
    /// Hash of the records.
    pub mixin: [u8; 32],
    /// Records.
    pub count: u32,
}

impl EntryHeader {
    /// Appends the header to `out` (the records follow).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.slot.to_le_bytes());
        out.extend_from_slice(&self.num_hashes.to_le_bytes());
        out.extend_from_slice(&self.hash);
        out.push(self.microblock as u8);
        out.extend_from_slice(&self.mixin);
        out.extend_from_slice(&self.count.to_le_bytes());
    }

    /// Decodes a header and checks the record length; none when malformed.
    pub fn decode(b: &[u8]) -> Option<EntryHeader> {
        if b.len() < ENTRY_HEADER {
            return None;
        }
        let h = EntryHeader {
            slot: u64::from_le_bytes(b[0..8].try_into().ok()?),
            num_hashes: u64::from_le_bytes(b[8..16].try_into().ok()?),
            hash: b[16..48].try_into().ok()?,
            microblock: match b[48] {
                0 => false,
                1 => true,
                _ => return None,
            },
            mixin: b[49..81].try_into().ok()?,
            count: u32::from_le_bytes(b[81..85].try_into().ok()?),
        };
        (b.len() == ENTRY_HEADER + RECORD_LEN * h.count as usize).then_some(h)
    }
}

/// What a verified ledger holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerSummary {
    /// Entries.
    pub entries: u64,
    /// Tick entries.
    pub ticks: u64,
    /// Microblock entries.
    pub microblocks: u64,
    /// Transaction records.
    pub records: u64,
    /// Hashes in the chain.
    pub hashes: u64,
    /// Last slot seen.
    pub last_slot: u64,
}

/// Verifies the hash chain of the ledger at `path` from `start`.
pub fn verify_ledger(path: &Path, start: [u8; 32]) -> Result<LedgerSummary> {
    let fail = |reason: String| Error::Ledger {
        path: path.to_path_buf(),
        reason,
    };
    let mut f = std::io::BufReader::new(std::fs::File::open(path).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })?);
    let mut s = LedgerSummary::default();
    let mut prev = start;
    let mut len = [0u8; 4];
    let mut buf = Vec::new();
    loop {
        match f.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(fail(e.to_string())),
        }
        buf.resize(u32::from_le_bytes(len) as usize, 0);
        f.read_exact(&mut buf)
            .map_err(|e| fail(format!("entry {}: {e}", s.entries)))?;
        let h = EntryHeader::decode(&buf)
            .ok_or_else(|| fail(format!("entry {}: malformed", s.entries)))?;
        let mut x = prev;
        for _ in 0..h.num_hashes {
            x = hash_once(&x);
        }
        if h.microblock {
            let m: [u8; 32] = Sha256::digest(&buf[ENTRY_HEADER..]).into();
            if m != h.mixin {
                return Err(fail(format!(
                    "entry {}: mixin is not the hash of its records",
                    s.entries
                )));
            }
            x = mix(&x, &h.mixin);
            s.microblocks += 1;
        } else {
            s.ticks += 1;
        }
        if x != h.hash {
            return Err(fail(format!(
                "entry {}: hash does not follow from the previous entry",
                s.entries
            )));
        }
        prev = x;
        s.entries += 1;
        s.records += h.count as u64;
        s.hashes += h.num_hashes;
        s.last_slot = h.slot;
    }
    Ok(s)
}
