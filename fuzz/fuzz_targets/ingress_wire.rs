//! The QUIC ingress stream as a node reads it from a client (dyno-net's `ingress::wire`):
//! the 42-byte hello, then frames and the end mark until the bytes run out or a frame is
//! refused; and the progress messages a client reads back. Nothing may panic; a frame is
//! never longer than the limit; the stream splits into items that encode back to the
//! bytes they came from; only the exact hello is accepted.
#![no_main]

use dyno_net::ingress::wire::{self, Framed};
use dyno_net::ingress::HELLO_LEN;
use libfuzzer_sys::fuzz_target;

/// The limit the reader is given: small, so the fuzzer reaches oversized frames cheaply.
const MAX_FRAME: usize = 1232;

fuzz_target!(|data: &[u8]| {
    let genesis = [0x5a; 32];
    let Some((hello, mut rest)) = data.split_at_checked(HELLO_LEN) else {
        return;
    };
    assert_eq!(
        wire::accepts_hello(hello, &genesis),
        hello == wire::hello(&genesis)
    );
    if let Some(m) = rest.first_chunk() {
        let (accepted, refused) = wire::progress(m);
        let mut again = accepted.to_be_bytes().to_vec();
        again.extend(refused.to_be_bytes());
        assert_eq!(again, m[..]);
    }
    loop {
        let item = wire::next_frame(rest, MAX_FRAME);
        match item {
            Framed::Frame { len } => {
                assert!(len <= MAX_FRAME);
                assert_eq!(wire::encode_frame(&rest[4..4 + len]), rest[..4 + len]);
            }
            Framed::End { sent } => {
                assert_eq!(wire::encode_end(sent), rest[..12]);
                return;
            }
            Framed::Oversized { len } => {
                assert!(len > MAX_FRAME);
                return;
            }
            Framed::Incomplete => return,
        }
        rest = &rest[item.bytes()..];
    }
});
