//! Tests of the link protocol on heap memory (these run under Miri).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::link::{Backpressure, HeapLink, Poll, ReadError};
use crate::seq::seq_inc;

fn count(full: u64) -> u64 {
    if cfg!(miri) {
        (full / 100).max(200)
    } else {
        full
    }
}

/// Payload of frag `seq`: `len(seq)` bytes, every byte equal to `seq as u8`.
fn frag_len(seq: u64, mtu: usize) -> usize {
    1 + (seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize % mtu
}

fn fill(seq: u64, mtu: usize, buf: &mut [u8]) -> usize {
    let n = frag_len(seq, mtu);
    buf[..n].fill(seq as u8);
    n
}

#[test]
fn sequence_numbers_wrap_past_u64_max() {
    let seq0 = u64::MAX - 20;
    let link = HeapLink::new(8, 64, seq0, 1).unwrap();
    let mut tx = link.producer();
    let mut rx = link.reliable_consumer(0).unwrap();
    let mut buf = [0u8; 64];
    let mut out = [0u8; 64];
    let mut expect = seq0;
    for round in 0..20u64 {
        // Publish until backpressured (depth frags at most), then drain.
        let mut sent = 0;
        loop {
            let n = fill(tx.seq(), 64, &mut buf);
            match tx.try_publish(tx.seq(), &buf[..n], 0, 0, 0) {
                Ok(_) => sent += 1,
                Err(Backpressure) => break,
            }
        }
        assert_eq!(
            sent, 8,
            "round {round}: a reliable link lets exactly depth frags out"
        );
        loop {
            match rx.poll() {
                Poll::CaughtUp => break,
                Poll::Overrun { lost } => panic!("reliable consumer overrun by {lost}"),
                Poll::Ready(meta) => {
                    assert_eq!(meta.seq, expect);
                    assert_eq!(meta.sig, expect);
                    let n = rx.read(&meta, &mut out).unwrap();
                    assert_eq!(n, frag_len(expect, 64));
                    assert!(out[..n].iter().all(|&b| b == expect as u8));
                    expect = seq_inc(expect, 1);
                }
            }
        }
        rx.publish_progress();
    }
    assert_eq!(expect, seq_inc(seq0, 160));
    assert!(expect < seq0, "the run crossed u64::MAX");
    assert_eq!(rx.counters.frags, 160);
    assert_eq!(rx.counters.ovrnp + rx.counters.ovrnr, 0);
}

#[test]
fn unreliable_consumer_counts_exactly_the_frags_it_lost_while_polling() {
    for seq0 in [0, u64::MAX - 3] {
        let depth = 16;
        let link = HeapLink::new(depth, 64, seq0, 0).unwrap();
        let mut tx = link.producer();
        let mut rx = link.unreliable_consumer();
        let k = 5;
        for _ in 0..depth + k {
            tx.try_publish(7, &[1; 10], 0, 0, 0).unwrap();
        }
        // The line of seq0 now holds seq0 + depth: everything before it is lost.
        assert_eq!(rx.poll(), Poll::Overrun { lost: depth });
        let mut buf = [0u8; 64];
        let mut got = Vec::new();
        while let Poll::Ready(meta) = rx.poll() {
            rx.read(&meta, &mut buf).unwrap();
            got.push(meta.seq);
        }
        let want: Vec<u64> = (depth..depth + k).map(|i| seq_inc(seq0, i)).collect();
        assert_eq!(got, want);
        assert_eq!(rx.counters.ovrnp, depth);
        assert_eq!(rx.counters.frags, k);
        assert_eq!(rx.counters.ovrnp + rx.counters.frags, tx.counters.frags);
    }
}

#[test]
fn unreliable_consumer_accounts_for_every_frag_under_arbitrary_interleavings() {
    // Deterministic pseudo-random bursts of publishing and polling.
    let link = HeapLink::new(8, 64, 1000, 0).unwrap();
    let mut tx = link.producer();
    let mut rx = link.unreliable_consumer();
    let mut state = 0x1234_5678_u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut buf = [0u8; 64];
    let mut last_read = None;
    for _ in 0..count(20_000) / 10 {
        for _ in 0..next() % 20 {
            let n = fill(tx.seq(), 64, &mut buf);
            tx.try_publish(0, &buf[..n], 0, 0, 0).unwrap();
        }
        for _ in 0..next() % 12 {
            match rx.poll() {
                Poll::CaughtUp => break,
                Poll::Overrun { .. } => {}
                Poll::Ready(meta) => {
                    let n = rx.read(&meta, &mut buf).unwrap();
                    assert!(buf[..n].iter().all(|&b| b == meta.seq as u8));
                    assert!(last_read.is_none_or(|l| l < meta.seq));
                    last_read = Some(meta.seq);
                }
            }
        }
        let c = rx.counters;
        assert_eq!(
            c.frags + c.ovrnp + c.ovrnr,
            rx.seq() - 1000,
            "every sequence number before the consumer's is either read or counted lost"
        );
    }
}

#[test]
fn overrun_while_reading_drops_and_counts_the_frag() {
    let depth = 4;
    let link = HeapLink::new(depth, 64, 0, 0).unwrap();
    let mut tx = link.producer();
    let mut rx = link.unreliable_consumer();
    tx.try_publish(0, &[0; 64], 0, 0, 0).unwrap();
    let Poll::Ready(meta) = rx.poll() else {
        panic!("frag 0 is ready")
    };
    // The producer laps the consumer between its poll and its read.
    for _ in 0..depth {
        tx.try_publish(0, &[9; 64], 0, 0, 0).unwrap();
    }
    let mut buf = [0u8; 64];
    assert_eq!(rx.read(&meta, &mut buf), Err(ReadError::Overrun));
    assert_eq!(rx.counters.ovrnr, 1);
    assert_eq!(rx.seq(), 1);
    // A too-small buffer is a corrupt read, also skipped and counted.
    tx.try_publish(0, &[1; 64], 0, 0, 0).unwrap();
    let mut small = [0u8; 8];
    loop {
        match rx.poll() {
            Poll::Ready(m) => {
                assert_eq!(rx.read(&m, &mut small), Err(ReadError::Corrupt));
                break;
            }
            Poll::Overrun { .. } => continue,
            Poll::CaughtUp => panic!("a frag is ready"),
        }
    }
    assert_eq!(rx.counters.ovrnr, 2);
}

#[test]
fn filtering_before_read_counts_filt1() {
    let link = HeapLink::new(8, 64, 0, 1).unwrap();
    let mut tx = link.producer();
    let mut rx = link.reliable_consumer(0).unwrap();
    for i in 0..6 {
        tx.try_publish(i, &[i as u8; 3], 0, 0, 0).unwrap();
    }
    let mut buf = [0u8; 64];
    while let Poll::Ready(meta) = rx.poll() {
        if meta.sig.is_multiple_of(2) {
            rx.skip(&meta);
        } else {
            rx.read(&meta, &mut buf).unwrap();
            if meta.sig == 5 {
                rx.filtered_after_read();
            }
        }
    }
    assert_eq!(rx.counters.filt1, 3);
    assert_eq!(rx.counters.frags, 3);
    assert_eq!(rx.counters.filt2, 1);
    rx.publish_progress();
    assert_eq!(tx.refresh_credits(), 8);
}

#[test]
fn reliable_consumer_loses_nothing_when_the_producer_outruns_it() {
    let n = count(100_000);
    let link = HeapLink::new(16, 128, u64::MAX - 1000, 1).unwrap();
    let mut tx = link.producer();
    let mut rx = link.reliable_consumer(0).unwrap();
    let seq0 = tx.seq();
    let producer = std::thread::spawn(move || {
        let mut buf = [0u8; 128];
        let mut backpressured = 0u64;
        let mut i = 0;
        while i < n {
            let s = tx.seq();
            let len = fill(s, 128, &mut buf);
            match tx.try_publish(s, &buf[..len], 0, 0, 0) {
                Ok(_) => i += 1,
                Err(Backpressure) => {
                    backpressured += 1;
                    std::thread::yield_now();
                }
            }
        }
        backpressured
    });
    let mut buf = [0u8; 128];
    let mut expect = seq0;
    let mut got = 0;
    while got < n {
        match rx.poll() {
            Poll::CaughtUp => {
                rx.publish_progress();
                std::thread::yield_now();
            }
            Poll::Overrun { lost } => panic!("reliable consumer overrun by {lost}"),
            Poll::Ready(meta) => {
                assert_eq!(meta.seq, expect);
                let len = rx
                    .read(&meta, &mut buf)
                    .expect("reliable read is never torn");
                assert_eq!(len, frag_len(expect, 128));
                assert!(buf[..len].iter().all(|&b| b == expect as u8));
                expect = seq_inc(expect, 1);
                got += 1;
                // Slow consumer: progress only every 8 frags.
                if got.is_multiple_of(8) {
                    rx.publish_progress();
                }
            }
        }
    }
    let _backpressured = producer.join().unwrap();
    assert_eq!(rx.counters.frags, n);
    assert_eq!(rx.counters.ovrnp + rx.counters.ovrnr, 0);
}

#[test]
fn a_reader_never_returns_a_torn_frag() {
    let n = count(100_000);
    let link = HeapLink::new(8, 256, 0, 0).unwrap();
    let mut tx = link.producer();
    let mut rx = link.unreliable_consumer();
    let done = Arc::new(AtomicBool::new(false));
    let done_tx = Arc::clone(&done);
    let producer = std::thread::spawn(move || {
        let mut buf = [0u8; 256];
        for _ in 0..n {
            let s = tx.seq();
            let len = fill(s, 256, &mut buf);
            tx.try_publish(s, &buf[..len], 0, 0, 0).unwrap();
            if s.is_multiple_of(64) {
                std::thread::yield_now();
            }
        }
        done_tx.store(true, Ordering::Release);
        tx.seq()
    });
    let mut buf = [0u8; 256];
    let mut last = None;
    loop {
        match rx.poll() {
            Poll::CaughtUp => {
                if done.load(Ordering::Acquire) && rx.poll() == Poll::CaughtUp {
                    break;
                }
                std::thread::yield_now();
            }
            Poll::Overrun { .. } => {}
            Poll::Ready(meta) => {
                if let Ok(len) = rx.read(&meta, &mut buf) {
                    assert_eq!(meta.sig, meta.seq);
                    assert_eq!(len, frag_len(meta.seq, 256), "size of frag {}", meta.seq);
                    assert!(
                        buf[..len].iter().all(|&b| b == meta.seq as u8),
                        "torn payload in frag {}",
                        meta.seq
                    );
                    assert!(last.is_none_or(|l| l < meta.seq));
                    last = Some(meta.seq);
                }
            }
        }
    }
    let end = producer.join().unwrap();
    assert_eq!(rx.seq(), end);
    let c = rx.counters;
    assert_eq!(
        c.frags + c.ovrnp + c.ovrnr,
        n,
        "every frag read or counted lost"
    );
}
