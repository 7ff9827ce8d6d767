//! The `garbage` misbehaviour of a node under test (its control file's `[misbehave]`,
//! which only a cluster's byzantine fault writes): a thread that sends every peer what no
//! honest node sends, as fast as the links take it. Mostly frames whose payload is no
//! protocol message (a known tag with a body that does not decode, or an unknown tag);
//! now and then a frame longer than any peer accepts, or bytes that are not a frame.
//! The honest peers' answers (refusing, cutting, banning) are theirs to log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;

use crate::log::EventLog;

/// A peer's link is fed while less than this waits unwritten to it, so the flood goes
/// at the link's speed without cutting itself as a slow peer.
const KEEP_QUEUED: usize = 1 << 20;
/// Malformed frames per turn and peer.
const BURST: usize = 64;
/// One turn in this many also sends an oversized frame or bytes that are no frame.
const RAW_EVERY: u64 = 32;

/// A running flood; [`Flood::stop`] ends it and logs what it sent.
pub(crate) struct Flood {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(u64, u64)>>,
    log: Arc<EventLog>,
}

impl Flood {
    /// Starts flooding `peers` over `net`; logs `misbehaved` (`kind` garbage).
    pub(crate) fn start(
        net: Arc<dyno_net::PeerNet>,
        peers: Vec<String>,
        log: Arc<EventLog>,
    ) -> Flood {
        log.event(
            "misbehaved",
            json!({"lie": "garbage", "what": "flood started", "peers": peers}),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("node-garbage".into())
            .spawn(move || run(&net, &peers, &s))
            .ok();
        Flood { stop, thread, log }
    }

    /// Stops the flood; logs `misbehaved` with the frames it sent.
    pub(crate) fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let (frames, raw) = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or((0, 0));
        self.log.event(
            "misbehaved",
            json!({"lie": "garbage", "what": "flood stopped", "frames": frames, "raw": raw}),
        );
    }
}

/// xorshift64: garbage needs no better randomness.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// One payload that no honest node sends: a known message tag whose body does not
/// decode (a header cut short, a fetch request of the wrong length, a block of noise),
/// or a tag no message has. At most 150 bytes: shorter than any header (153), so
/// none decodes by chance.
fn malformed(noise: &mut Noise) -> Vec<u8> {
    let len = 1 + (noise.next() % 150) as usize;
    let mut p = noise.bytes(len);
    p[0] = match noise.next() % 4 {
        0 => 1,                              // a header that does not decode
        1 => 2,                              // GetBlock with a body of the wrong length
        2 => 3,                              // a block of noise
        _ => 8 + (noise.next() % 200) as u8, // no such message
    };
    if p[0] == 2 && p.len() == 33 {
        p.push(0);
    }
    p
}

/// Bytes that are not a frame a peer accepts: a length past every limit, or a frame of
/// a kind the protocol does not have.
fn raw(noise: &mut Noise) -> Vec<u8> {
    let mut b = Vec::new();
    if noise.next().is_multiple_of(2) {
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        b.push(2);
    } else {
        b.extend_from_slice(&9u32.to_be_bytes());
        b.push(0x55);
        b.extend_from_slice(&[0; 8]);
    }
    b.extend(noise.bytes(64));
    b
}

fn run(net: &dyno_net::PeerNet, peers: &[String], stop: &AtomicBool) -> (u64, u64) {
    let mut noise = Noise(crate::log::now_ns() | 1);
    let (mut frames, mut raws, mut turn) = (0u64, 0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        turn += 1;
        let mut sent = false;
        for p in peers {
            if net.queued_bytes(p).is_none_or(|q| q >= KEEP_QUEUED) {
                continue;
            }
            for _ in 0..BURST {
                if net.send(p, malformed(&mut noise)) {
                    frames += 1;
                    sent = true;
                }
            }
            if turn % RAW_EVERY == 0 && net.send_raw(p, raw(&mut noise)) {
                raws += 1;
            }
        }
        if !sent {
            // No link takes more now (each is full, cut, or refusing this node).
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    (frames, raws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Message;

    #[test]
    fn flood_payloads_never_decode_as_a_message_and_raw_bytes_are_no_acceptable_frame() {
        let mut noise = Noise(42);
        for _ in 0..5_000 {
            let m = malformed(&mut noise);
            match Message::decode(&m) {
                None => {}
                // A header or block of noise decodes as the message but not its body.
                Some(Message::Header(h)) => {
                    assert!(crate::block::Header::decode(&h).is_err())
                }
                Some(Message::Block(b)) => assert!(crate::block::Block::decode(&b).is_err()),
                Some(other) => panic!("a flood payload decoded as {other:?}"),
            }
        }
        for _ in 0..100 {
            let r = raw(&mut noise);
            let mut reader = &r[..];
            assert!(dyno_net::frame::read_data(&mut reader, 1 << 20).is_err());
        }
    }
}
