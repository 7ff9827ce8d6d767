//! The deduplication tile.

use super::*;

/// What dedup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DedupStats {
    /// Forwarded.
    pub unique: u64,
    /// Dropped as repeats.
    pub duplicates: u64,
    /// Ids dropped (audit runs only).
    pub duplicate_ids: Vec<u64>,
}

/// Drops transactions whose signature was seen among the last `depth` signatures.
pub struct Dedup {
    depth: usize,
    seen: HashSet<u128>,
    order: VecDeque<u128>,
    audit: bool,
    /// Counters.
    pub stats: DedupStats,
}

impl Dedup {
    /// A cache of `depth` signatures.
    pub fn new(depth: usize, audit: bool) -> Dedup {
        Dedup {
            depth,
            seen: HashSet::with_capacity(depth.min(1 << 20)),
            order: VecDeque::with_capacity(depth.min(1 << 20)),
            audit,
            stats: DedupStats::default(),
        }
    }
}

impl Tile for Dedup {
    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome {
        let tag = tx::sig_tag(payload.get(ENV_HEADER..).unwrap_or_default());
        if !self.seen.insert(tag) {
            self.stats.duplicates += 1;
            if self.audit {
                self.stats.duplicate_ids.push(meta.sig);
            }
            return FragOutcome::Filtered;
        }
        self.order.push_back(tag);
        if self.order.len() > self.depth {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
        self.stats.unique += 1;
        let _ = out.publish(0, meta.sig, payload, meta.tsorig);
        FragOutcome::Done
    }
}
