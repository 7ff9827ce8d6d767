//! Links: one producer, any number of consumers, over an mcache + dcache (+ one fseq per
//! reliable consumer).
//!
//! * [`Producer`] publishes frags while it has credits. Its credits are
//!   `min over reliable consumers of depth - (tx_seq - rx_seq)`; with fewer credits than
//!   it needs it is backpressured and must wait. Unreliable consumers never limit it.
//! * [`Consumer`] polls the line of the sequence number it expects ([`Poll`]), may filter
//!   a frag on its `sig` before reading the payload (filt1), copies the payload and
//!   validates the copy ([`Consumer::read`]), and counts every frag it lost: overrun
//!   while polling (ovrnp: it skips to the sequence number found and counts the gap)
//!   and overrun while reading (ovrnr: the copied frag is dropped and counted).
//!
//! Invariant checked by the tests: for a consumer, frags read + filtered before read +
//! lost while polling + lost while reading = frags published since it joined.

use crate::dcache::Dcache;
use crate::error::{Error, Result};
use crate::fseq::{Fseq, FSEQ_FOOTPRINT};
use crate::mcache::{FragMeta, LineState, Mcache};
use crate::region::{Region, REGION_ALIGN};
use crate::seq::{seq_diff, seq_inc};

/// A link's producer counters: kept locally by the [`Producer`], stored into its
/// shared [`crate::metrics::LinkMetrics`] at housekeeping, and read back into a
/// [`crate::snapshot::LinkSnapshot`] (the one definition of these counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProducerCounters {
    /// Frags published.
    pub frags: u64,
    /// Payload bytes published.
    pub bytes: u64,
}

/// A consumer's counters: kept locally by the [`Consumer`], stored into its shared
/// [`crate::metrics::ConsumerMetrics`] at housekeeping, and read back into a
/// [`crate::snapshot::ConsumerSnapshot`] (the one definition of these counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ConsumerCounters {
    /// Frags whose payload was read and validated.
    pub frags: u64,
    /// Payload bytes read and validated.
    pub bytes: u64,
    /// Frags filtered on their sig, before reading the payload.
    pub filt1: u64,
    /// Frags filtered after reading the payload (reported by the tile).
    pub filt2: u64,
    /// Frags lost because the consumer was overrun while polling.
    pub ovrnp: u64,
    /// Frags lost because they were overwritten while being read.
    pub ovrnr: u64,
}

impl ProducerCounters {
    /// The counts since `prev` (all of them when there was none before).
    pub fn since(&self, prev: Option<&ProducerCounters>) -> ProducerCounters {
        let prev = prev.copied().unwrap_or_default();
        ProducerCounters {
            frags: self.frags.saturating_sub(prev.frags),
            bytes: self.bytes.saturating_sub(prev.bytes),
        }
    }
}

impl ConsumerCounters {
    /// The counts since `prev` (all of them when there was none before).
    pub fn since(&self, prev: Option<&ConsumerCounters>) -> ConsumerCounters {
        let prev = prev.copied().unwrap_or_default();
        ConsumerCounters {
            frags: self.frags.saturating_sub(prev.frags),
            bytes: self.bytes.saturating_sub(prev.bytes),
            filt1: self.filt1.saturating_sub(prev.filt1),
            filt2: self.filt2.saturating_sub(prev.filt2),
            ovrnp: self.ovrnp.saturating_sub(prev.ovrnp),
            ovrnr: self.ovrnr.saturating_sub(prev.ovrnr),
        }
    }
}

/// The producer end of a link.
#[derive(Debug)]
pub struct Producer {
    mcache: Mcache,
    dcache: Dcache,
    /// Progress of the reliable consumers.
    fseqs: Vec<Fseq>,
    /// Next sequence number to publish.
    seq: u64,
    /// Next payload chunk. Invariant: a frag of `mtu` bytes fits at `chunk`.
    chunk: u32,
    /// Frags that may be published before the next refresh.
    /// Invariant: credits <= depth.
    credits: u64,
    /// Index of the reliable consumer that limited the last refresh, if any did.
    slowest: Option<usize>,
    /// Local counters.
    pub counters: ProducerCounters,
}

/// The producer had no credit: every reliable consumer must catch up first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backpressure;

impl Producer {
    /// A producer publishing from `mcache.seq0()`; `reliable` are the fseqs of the
    /// consumers that must never be overrun.
    pub fn new(mcache: Mcache, dcache: Dcache, reliable: Vec<Fseq>) -> Producer {
        let seq = mcache.seq_hint();
        let mut p = Producer {
            mcache,
            dcache,
            fseqs: reliable,
            seq,
            chunk: 0,
            credits: 0,
            slowest: None,
            counters: ProducerCounters::default(),
        };
        p.refresh_credits();
        p
    }

    /// Next sequence number to publish.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Ring depth.
    pub fn depth(&self) -> u64 {
        self.mcache.depth()
    }

    /// Largest payload.
    pub fn mtu(&self) -> usize {
        self.dcache.mtu()
    }

    /// Credits left before the next refresh.
    pub fn credits(&self) -> u64 {
        self.credits
    }

    /// The reliable consumer (index into the `reliable` list) that limited the last
    /// refresh, when it left fewer credits than the depth.
    pub fn slowest(&self) -> Option<usize> {
        self.slowest
    }

    /// Recomputes credits from the reliable consumers' fseqs.
    pub fn refresh_credits(&mut self) -> u64 {
        let depth = self.mcache.depth();
        let mut credits = depth;
        self.slowest = None;
        for (i, f) in self.fseqs.iter().enumerate() {
            let behind = seq_diff(self.seq, f.query()).clamp(0, depth as i64) as u64;
            let c = depth - behind;
            if c < credits {
                credits = c;
                self.slowest = Some(i);
            }
        }
        debug_assert!(credits <= depth);
        self.credits = credits;
        credits
    }

    /// Publishes the producer's next sequence number in the mcache header (housekeeping).
    pub fn publish_seq_hint(&self) {
        self.mcache.set_seq_hint(self.seq);
    }

    /// Publishes one frag, refreshing credits once if none are left.
    /// `payload.len()` must be at most the link's mtu (longer payloads are an error).
    #[inline]
    pub fn try_publish(
        &mut self,
        sig: u64,
        payload: &[u8],
        ctl: u16,
        tsorig: u32,
        tspub: u32,
    ) -> Result<u64, Backpressure> {
        if self.credits == 0 && self.refresh_credits() == 0 {
            return Err(Backpressure);
        }
        assert!(
            payload.len() <= self.dcache.mtu(),
            "payload of {} bytes exceeds the link mtu {}",
            payload.len(),
            self.dcache.mtu()
        );
        let seq = self.seq;
        self.dcache.write(self.chunk, payload);
        self.mcache.publish(&FragMeta {
            seq,
            sig,
            chunk: self.chunk,
            sz: payload.len() as u16,
            ctl,
            tsorig,
            tspub,
        });
        self.chunk = self.dcache.compact_next(self.chunk, payload.len());
        self.seq = seq_inc(seq, 1);
        self.credits -= 1;
        self.counters.frags += 1;
        self.counters.bytes += payload.len() as u64;
        Ok(seq)
    }
}

/// What a consumer found when polling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poll {
    /// Nothing new.
    CaughtUp,
    /// The consumer was overrun while polling: it skipped `lost` frags (counted in ovrnp)
    /// and now expects the sequence number it found.
    Overrun {
        /// Frags skipped.
        lost: u64,
    },
    /// The next frag is available; call [`Consumer::skip`] or [`Consumer::read`].
    Ready(FragMeta),
}

/// The frag was overwritten while it was being read (counted in ovrnr, skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// Overrun while reading.
    Overrun,
    /// The record pointed outside the payload ring or the buffer was too small; the frag
    /// is skipped and counted as overrun while reading.
    Corrupt,
}

/// A consumer end of a link.
#[derive(Debug)]
pub struct Consumer {
    mcache: Mcache,
    dcache: Dcache,
    /// Present for reliable consumers.
    fseq: Option<Fseq>,
    /// Next sequence number expected.
    seq: u64,
    /// Last value stored in the fseq: progress is only stored when it changed, so an
    /// idle consumer does not keep invalidating the producer's copy of the line.
    published: u64,
    /// Local counters.
    pub counters: ConsumerCounters,
}

impl Consumer {
    /// A consumer starting at the producer's current position (for reliable consumers:
    /// at the fseq's position, so nothing published since the fseq was formatted is lost).
    pub fn new(mcache: Mcache, dcache: Dcache, fseq: Option<Fseq>) -> Consumer {
        let seq = match &fseq {
            Some(f) => f.query(),
            None => mcache.seq_hint(),
        };
        Consumer {
            mcache,
            dcache,
            fseq,
            seq,
            published: seq,
            counters: ConsumerCounters::default(),
        }
    }

    /// Next sequence number expected.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// True for consumers that publish progress and are never overrun.
    pub fn is_reliable(&self) -> bool {
        self.fseq.is_some()
    }

    /// Largest payload on this link.
    pub fn mtu(&self) -> usize {
        self.dcache.mtu()
    }

    /// The producer's next sequence number as of its last housekeeping.
    pub fn producer_seq_hint(&self) -> u64 {
        self.mcache.seq_hint()
    }

    /// Publishes progress to the producer (no-op for unreliable consumers).
    #[inline]
    pub fn publish_progress(&mut self) {
        if let Some(f) = &self.fseq {
            if self.published != self.seq {
                f.update(self.seq);
                self.published = self.seq;
            }
        }
    }

    /// Looks at the line of the expected sequence number.
    #[inline]
    pub fn poll(&mut self) -> Poll {
        match self.mcache.query(self.seq) {
            LineState::CaughtUp => Poll::CaughtUp,
            LineState::Ready(meta) => Poll::Ready(meta),
            LineState::Overrun { found } => {
                let lost = seq_diff(found, self.seq);
                debug_assert!(lost > 0);
                let lost = lost.max(0) as u64;
                self.counters.ovrnp += lost;
                self.seq = found;
                Poll::Overrun { lost }
            }
        }
    }

    /// Skips the ready frag without reading its payload (filtered before read).
    #[inline]
    pub fn skip(&mut self, meta: &FragMeta) {
        debug_assert_eq!(meta.seq, self.seq);
        self.counters.filt1 += 1;
        self.seq = seq_inc(self.seq, 1);
    }

    /// Copies the ready frag's payload into `buf` and validates the copy; the consumer
    /// moves past the frag either way.
    #[inline]
    pub fn read(&mut self, meta: &FragMeta, buf: &mut [u8]) -> Result<usize, ReadError> {
        debug_assert_eq!(meta.seq, self.seq);
        let res = match self.dcache.read(meta.chunk, meta.sz as usize, buf) {
            None => Err(ReadError::Corrupt),
            Some(n) if self.mcache.still_holds(meta.seq) => Ok(n),
            Some(_) => Err(ReadError::Overrun),
        };
        self.seq = seq_inc(self.seq, 1);
        match res {
            Ok(n) => {
                self.counters.frags += 1;
                self.counters.bytes += n as u64;
            }
            Err(_) => self.counters.ovrnr += 1,
        }
        res
    }

    /// Counts the frag just read as filtered after reading (filt2).
    #[inline]
    pub fn filtered_after_read(&mut self) {
        self.counters.filt2 += 1;
    }
}

/// A link built on heap memory (one process): handy for tests and benchmarks.
#[derive(Debug)]
pub struct HeapLink {
    /// The mcache.
    pub mcache: Mcache,
    /// The dcache.
    pub dcache: Dcache,
    /// One fseq per reliable consumer.
    pub fseqs: Vec<Fseq>,
}

impl HeapLink {
    /// A link of `depth` records carrying up to `mtu` bytes, starting at `seq0`, with
    /// `reliable` reliable consumers.
    pub fn new(depth: u64, mtu: usize, seq0: u64, reliable: usize) -> Result<HeapLink> {
        let m = Region::heap(Mcache::footprint(depth))?;
        Mcache::new(&m, depth, seq0)?;
        let d = Region::heap(Dcache::footprint(mtu, depth))?;
        Dcache::new(&d, mtu, depth)?;
        let mut fseqs = Vec::with_capacity(reliable);
        for _ in 0..reliable {
            let f = Region::heap(FSEQ_FOOTPRINT.max(REGION_ALIGN))?;
            Fseq::new(&f, seq0)?;
            fseqs.push(Fseq::join(&f)?);
        }
        Ok(HeapLink {
            mcache: Mcache::join(&m)?,
            dcache: Dcache::join(&d)?,
            fseqs,
        })
    }

    /// The producer end (call once).
    pub fn producer(&self) -> Producer {
        Producer::new(self.mcache.clone(), self.dcache.clone(), self.fseqs.clone())
    }

    /// The `i`-th reliable consumer.
    pub fn reliable_consumer(&self, i: usize) -> Result<Consumer> {
        let f = self.fseqs.get(i).cloned().ok_or_else(|| {
            Error::Invalid(format!("link has {} reliable consumers", self.fseqs.len()))
        })?;
        Ok(Consumer::new(
            self.mcache.clone(),
            self.dcache.clone(),
            Some(f),
        ))
    }

    /// An unreliable consumer starting at the producer's last published position.
    pub fn unreliable_consumer(&self) -> Consumer {
        Consumer::new(self.mcache.clone(), self.dcache.clone(), None)
    }
}

#[cfg(test)]
mod tests;
