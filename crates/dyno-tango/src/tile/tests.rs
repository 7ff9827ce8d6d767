//! Tests of the stem (run loop) on heap links.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::link::HeapLink;
use crate::mcache::FragMeta;
use crate::metrics::{Bucket, TileMetrics, BUCKETS};
use crate::region::Region;
use crate::snapshot::TimeSplit;
use crate::tile::{FragOutcome, InLink, OutLink, Outputs, Stem, StemOptions, Tile};

struct Source {
    n: u64,
    sent: u64,
}

impl Tile for Source {
    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        if self.sent == self.n {
            return false;
        }
        let seq = out.producer(0).seq();
        out.publish(0, seq, &[seq as u8; 32], 0).unwrap();
        self.sent += 1;
        true
    }
    fn after_frag(&mut self, _: usize, _: &FragMeta, _: &[u8], _: &mut Outputs) -> FragOutcome {
        FragOutcome::Done
    }
    fn finished(&self) -> bool {
        self.sent == self.n
    }
}

/// Drops sig % 3 == 0 before reading and sig % 3 == 1 after; stops after `n` frags.
struct Sink {
    n: u64,
    seen: u64,
    done: u64,
}

impl Tile for Sink {
    fn before_frag(&mut self, _: usize, meta: &FragMeta) -> bool {
        self.seen += 1;
        !meta.sig.is_multiple_of(3)
    }
    fn after_frag(
        &mut self,
        _: usize,
        meta: &FragMeta,
        payload: &[u8],
        _: &mut Outputs,
    ) -> FragOutcome {
        assert!(payload.iter().all(|&b| b == meta.seq as u8));
        if meta.sig % 3 == 1 {
            FragOutcome::Filtered
        } else {
            self.done += 1;
            FragOutcome::Done
        }
    }
    fn finished(&self) -> bool {
        self.seen == self.n
    }
}

#[test]
// Two spinning loops interleaved by Miri's scheduler take far too long; the link protocol
// underneath is covered under Miri by link_tests.
#[cfg_attr(miri, ignore)]
fn stems_move_every_frag_and_account_exclusively() {
    let n = 30_000;
    let link = HeapLink::new(64, 64, 0, 1).unwrap();
    let opts = StemOptions {
        lazy_ns: 20_000,
        ..StemOptions::default()
    };
    let tm = Region::heap(TileMetrics::FOOTPRINT).unwrap();
    TileMetrics::new(&tm).unwrap();
    let mut src = Stem::new(
        Source { n, sent: 0 },
        Vec::new(),
        vec![OutLink {
            producer: link.producer(),
            metrics: None,
            slow: vec![None],
        }],
        Some(tm.clone()),
        opts.clone(),
    );
    let mut sink = Stem::new(
        Sink {
            n,
            seen: 0,
            done: 0,
        },
        vec![InLink {
            consumer: link.reliable_consumer(0).unwrap(),
            metrics: None,
        }],
        Vec::new(),
        None,
        opts,
    );
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| src.run(&stop));
        s.spawn(|| sink.run(&stop));
    });
    let c = sink.inputs()[0].consumer.counters;
    assert_eq!(c.filt1, n / 3);
    assert_eq!(c.filt2, n / 3);
    assert_eq!(c.frags, n - n / 3);
    assert_eq!(sink.tile().done, n / 3);
    assert_eq!(c.ovrnp + c.ovrnr, 0);
    let finish = sink.ticks_by_bucket()[Bucket::Finish as usize];
    assert!(finish > 0 || cfg!(not(target_arch = "x86_64")));
    // The shared copy holds the same totals (converted to ns) and the final state.
    let m = TileMetrics::join(&tm).unwrap();
    let shared: [u64; BUCKETS] = std::array::from_fn(|i| m.time_ns[i].load(Ordering::Relaxed));
    let local = src.ticks_by_bucket().map(crate::clock::ticks_to_ns);
    assert_eq!(shared, local);
    let shares = TimeSplit::from_array(shared).shares();
    assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert_eq!(m.state.load(Ordering::Relaxed), 2, "halted");
    assert_eq!(
        m.backp_cnt.load(Ordering::Relaxed),
        src.backpressure_count()
    );
}

#[test]
fn an_external_stop_halts_an_idle_tile() {
    let link = HeapLink::new(8, 64, 0, 0).unwrap();
    let tm = Region::heap(TileMetrics::FOOTPRINT).unwrap();
    TileMetrics::new(&tm).unwrap();
    let mut sink = Stem::new(
        Sink {
            n: u64::MAX,
            seen: 0,
            done: 0,
        },
        vec![InLink {
            consumer: link.unreliable_consumer(),
            metrics: None,
        }],
        Vec::new(),
        Some(tm.clone()),
        StemOptions::default(),
    );
    let stop = AtomicBool::new(true);
    sink.run(&stop);
    assert_eq!(sink.tile().seen, 0);
    let m = TileMetrics::join(&tm).unwrap();
    assert_eq!(m.state.load(Ordering::Relaxed), 2, "halted");
    assert_eq!(m.pid.load(Ordering::Relaxed), std::process::id() as u64);
}
