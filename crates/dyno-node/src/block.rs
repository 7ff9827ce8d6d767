//! Blocks: a header and the slot's PoH entries, and their byte encoding.
//!
//! # Encoding (little-endian)
//!
//! ```text
//! header:  slot u64, height u64, parent [32], leader (u8 length, bytes, <= 64),
//!          entry_count u32, poh_start [32], poh_end [32], tx_count u32, state_hash [32]
//! entry:   num_hashes u64, hash [32], n u32, then n x (u16 length, transaction bytes)
//! block:   header, signature [64], then entry_count entries, nothing after
//! ```
//!
//! The block hash is SHA-256 over `"dyno-block"` and the encoded header; the signature
//! is the leader's ed25519 signature of the block hash (its key derives from the genesis,
//! see [`crate::genesis::Genesis::leader_key`]). The header
//! commits to the body through the PoH chain, exactly as the pipeline's poh tile records
//! it: each entry's hash is `mix(sha256^num_hashes(previous hash), mixin)`, the mixin
//! being SHA-256 over the entry's execution records (per transaction its 64-byte
//! signature and a status byte, 0 executed, 1 failed: the bank tile's record), and an
//! entry without transactions is a tick: `sha256^num_hashes(previous)`; from
//! `poh_start` (the parent's `poh_end`) to `poh_end`. A follower gets the statuses by
//! replaying the block, so the chain also commits to every transaction's outcome; the
//! message bytes are bound to their signatures, which every follower verifies.
//!
//! Entries hold any number of transactions and at most [`HASHES_PER_ENTRY`] hashes each
//! (the poh tile cuts a tick at that many): a peer can make a node hash no more than
//! that per entry it sends, so PoH work is bounded by the bytes received.

use sha2::{Digest, Sha256};

use dyno_tiles::ledger::{hash_once, mix};

use crate::hash::Hash;

/// Longest leader id.
pub const MAX_LEADER_LEN: usize = 64;
/// Most hashes before an entry (the PoH tick length of a node's pipeline; the
/// sequential forge hashes exactly this many per entry).
pub const HASHES_PER_ENTRY: u64 = 64;
/// Transactions per entry in the sequential forge (the tile forge cuts an entry per
/// microblock, as pack made it).
pub const TXS_PER_ENTRY: usize = 64;

/// A block header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Slot.
    pub slot: u64,
    /// Blocks since genesis (genesis = 0).
    pub height: u64,
    /// Hash of the parent block (the genesis hash for height 1).
    pub parent: Hash,
    /// Leader's node id.
    pub leader: String,
    /// Entries in the body.
    pub entry_count: u32,
    /// PoH chain start (the parent's `poh_end`).
    pub poh_start: Hash,
    /// PoH chain end.
    pub poh_end: Hash,
    /// Transactions in the body.
    pub tx_count: u32,
    /// State hash after executing the body on the parent's state.
    pub state_hash: Hash,
}

/// One PoH entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Hashes since the previous entry.
    pub num_hashes: u64,
    /// Chain hash after this entry.
    pub hash: Hash,
    /// Encoded transactions mixed in (none: a tick).
    pub txs: Vec<Vec<u8>>,
}

/// A block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Header.
    pub header: Header,
    /// The leader's signature of the block hash.
    pub signature: [u8; 64],
    /// Entries.
    pub entries: Vec<Entry>,
}

/// Why bytes are not a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("malformed block: {0}")]
pub struct Malformed(pub &'static str);

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn hash(&mut self) -> Result<Hash, Malformed> {
        Ok(Hash(self.take(32)?.try_into().expect("32")))
    }
}

impl Header {
    /// Appends the encoded header.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.slot.to_le_bytes());
        out.extend_from_slice(&self.height.to_le_bytes());
        out.extend_from_slice(self.parent.as_bytes());
        let id = &self.leader.as_bytes()[..self.leader.len().min(MAX_LEADER_LEN)];
        out.push(id.len() as u8);
        out.extend_from_slice(id);
        out.extend_from_slice(&self.entry_count.to_le_bytes());
        out.extend_from_slice(self.poh_start.as_bytes());
        out.extend_from_slice(self.poh_end.as_bytes());
        out.extend_from_slice(&self.tx_count.to_le_bytes());
        out.extend_from_slice(self.state_hash.as_bytes());
    }

    /// The encoded header.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(200);
        self.encode_into(&mut v);
        v
    }

    /// The block hash.
    pub fn hash(&self) -> Hash {
        let mut h = Sha256::new();
        h.update(b"dyno-block");
        h.update(self.encode());
        Hash(h.finalize().into())
    }

    fn read(r: &mut Reader<'_>) -> Result<Header, Malformed> {
        let slot = r.u64()?;
        let height = r.u64()?;
        let parent = r.hash()?;
        let n = r.take(1)?[0] as usize;
        if n > MAX_LEADER_LEN {
            return Err(Malformed("leader id too long"));
        }
        let leader = std::str::from_utf8(r.take(n)?)
            .map_err(|_| Malformed("leader id not UTF-8"))?
            .to_string();
        Ok(Header {
            slot,
            height,
            parent,
            leader,
            entry_count: r.u32()?,
            poh_start: r.hash()?,
            poh_end: r.hash()?,
            tx_count: r.u32()?,
            state_hash: r.hash()?,
        })
    }

    /// Decodes the header at the start of `b` (an encoded block), ignoring the rest.
    pub fn decode_prefix(b: &[u8]) -> Option<Header> {
        Header::read(&mut Reader(b)).ok()
    }

    /// Decodes exactly one header.
    pub fn decode(b: &[u8]) -> Result<Header, Malformed> {
        let mut r = Reader(b);
        let h = Header::read(&mut r)?;
        if !r.0.is_empty() {
            return Err(Malformed("trailing bytes after the header"));
        }
        Ok(h)
    }
}

/// The mixin of an entry: SHA-256 over its execution records, per transaction its
/// signature (the first 64 bytes) and a status byte (0 executed, 1 failed), as the
/// bank tile hands them to the poh tile.
pub fn mixin(txs: &[Vec<u8>], executed: &[bool]) -> Hash {
    let mut h = Sha256::new();
    for (t, ok) in txs.iter().zip(executed) {
        // Transactions shorter than a signature never get here: they do not decode.
        h.update(&t[..t.len().min(64)]);
        h.update([!ok as u8]);
    }
    Hash(h.finalize().into())
}

/// The hash after `num_hashes` steps from `prev`, mixed with `mixin` (none: a tick).
pub fn next_hash(prev: &Hash, num_hashes: u64, mixin: Option<Hash>) -> Hash {
    let mut h = prev.0;
    for _ in 0..num_hashes {
        h = hash_once(&h);
    }
    Hash(match mixin {
        Some(m) => mix(&h, &m.0),
        None => h,
    })
}

impl Block {
    /// Builds the entries of `txs` (in order, every one executed) from `poh_start`;
    /// returns them and the end (tests build blocks with it).
    pub fn entries_of(poh_start: Hash, txs: Vec<Vec<u8>>) -> (Vec<Entry>, Hash) {
        let executed = vec![true; txs.len()];
        Block::entries_with(poh_start, txs, &executed)
    }

    /// The sequential forge's entries: [`TXS_PER_ENTRY`] transactions each with their
    /// outcomes (`executed[i]` of `txs[i]`), [`HASHES_PER_ENTRY`] hashes before each, one
    /// tick when there are none.
    pub fn entries_with(
        poh_start: Hash,
        txs: Vec<Vec<u8>>,
        executed: &[bool],
    ) -> (Vec<Entry>, Hash) {
        let mut prev = poh_start;
        let mut entries = Vec::new();
        let mut it = txs.into_iter().peekable();
        let mut at = 0;
        while it.peek().is_some() {
            let chunk: Vec<Vec<u8>> = it.by_ref().take(TXS_PER_ENTRY).collect();
            let ok = &executed[at..at + chunk.len()];
            at += chunk.len();
            prev = next_hash(&prev, HASHES_PER_ENTRY, Some(mixin(&chunk, ok)));
            entries.push(Entry {
                num_hashes: HASHES_PER_ENTRY,
                hash: prev,
                txs: chunk,
            });
        }
        if entries.is_empty() {
            prev = next_hash(&prev, HASHES_PER_ENTRY, None);
            entries.push(Entry {
                num_hashes: HASHES_PER_ENTRY,
                hash: prev,
                txs: Vec::new(),
            });
        }
        (entries, prev)
    }

    /// The encoded block.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.header.encode();
        out.extend_from_slice(&self.signature);
        for e in &self.entries {
            out.extend_from_slice(&e.num_hashes.to_le_bytes());
            out.extend_from_slice(e.hash.as_bytes());
            out.extend_from_slice(&(e.txs.len() as u32).to_le_bytes());
            for t in &e.txs {
                out.extend_from_slice(&(t.len() as u16).to_le_bytes());
                out.extend_from_slice(t);
            }
        }
        out
    }

    /// Decodes a block; never panics. Checks the shape only (counts, lengths); the
    /// chain's validation checks what the bytes claim.
    pub fn decode(b: &[u8]) -> Result<Block, Malformed> {
        let mut r = Reader(b);
        let header = Header::read(&mut r)?;
        let signature: [u8; 64] = r.take(64)?.try_into().expect("64");
        let mut entries = Vec::new();
        let mut txs_seen = 0u64;
        for _ in 0..header.entry_count {
            let num_hashes = r.u64()?;
            let hash = r.hash()?;
            let n = r.u32()?;
            // Each transaction takes at least 2 bytes: a claimed count beyond what is
            // left is a lie, refused before allocating for it.
            if n as usize > r.0.len() / 2 {
                return Err(Malformed("entry claims more transactions than bytes"));
            }
            let mut txs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let len = u16::from_le_bytes(r.take(2)?.try_into().expect("2")) as usize;
                txs.push(r.take(len)?.to_vec());
            }
            txs_seen += n as u64;
            entries.push(Entry {
                num_hashes,
                hash,
                txs,
            });
        }
        if !r.0.is_empty() {
            return Err(Malformed("trailing bytes after the last entry"));
        }
        if txs_seen != header.tx_count as u64 {
            return Err(Malformed("tx_count differs from the entries"));
        }
        Ok(Block {
            header,
            signature,
            entries,
        })
    }

    /// Every transaction in order.
    pub fn txs(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.entries.iter().flat_map(|e| e.txs.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Block {
        let txs: Vec<Vec<u8>> = (0..n).map(|i| vec![i as u8; 10 + i % 7]).collect();
        let (entries, end) = Block::entries_of(Hash([3; 32]), txs);
        Block {
            header: Header {
                slot: 9,
                height: 4,
                parent: Hash([1; 32]),
                leader: "n1".into(),
                entry_count: entries.len() as u32,
                poh_start: Hash([3; 32]),
                poh_end: end,
                tx_count: n as u32,
                state_hash: Hash([5; 32]),
            },
            signature: [6; 64],
            entries,
        }
    }

    #[test]
    fn blocks_round_trip_and_truncation_is_refused() {
        for n in [0, 1, 64, 65, 200] {
            let b = sample(n);
            let bytes = b.encode();
            assert_eq!(Block::decode(&bytes).unwrap(), b);
            assert_eq!(Header::decode(&b.header.encode()).unwrap(), b.header);
            assert!(Block::decode(&bytes[..bytes.len() - 1]).is_err());
            let mut long = bytes.clone();
            long.push(0);
            assert!(Block::decode(&long).is_err());
        }
        assert_eq!(sample(0).entries.len(), 1, "an empty block has one tick");
        assert_eq!(sample(65).entries.len(), 2);
    }

    #[test]
    fn the_hash_changes_with_every_header_field() {
        let h = sample(3).header;
        let base = h.hash();
        let mut v = h.clone();
        v.slot += 1;
        assert_ne!(v.hash(), base);
        let mut v = h.clone();
        v.state_hash.0[0] ^= 1;
        assert_ne!(v.hash(), base);
        let mut v = h.clone();
        v.leader = "n2".into();
        assert_ne!(v.hash(), base);
    }

    #[test]
    fn decoding_garbage_never_panics() {
        let mut s = 0x1234_5678u64;
        for len in 0..400 {
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s as u8
                })
                .collect();
            let _ = Block::decode(&b);
            let _ = Header::decode(&b);
        }
    }
}
