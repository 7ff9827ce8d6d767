//! The peer wire format as a node reads it from a TCP link (dyno-net's `frame`): the
//! preamble, the hello, then data frames until the bytes run out or a frame is refused.
//! Nothing may panic, a payload is never longer than the limit, and a hello that decodes
//! encodes back to the bytes it came from.
#![no_main]

use dyno_net::frame::{self, ReadError};
use libfuzzer_sys::fuzz_target;

/// The limit the reader is given: small, so the fuzzer reaches `oversized` cheaply.
const MAX_PAYLOAD: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let mut r = data;
    if frame::read_preamble(&mut r).is_err() {
        return;
    }
    let before = r;
    let hello = match frame::read_hello(&mut r) {
        Ok(h) => h,
        Err(_) => return,
    };
    let used = before.len() - r.len();
    // Ids of up to 255 bytes encode as they were read.
    assert_eq!(frame::encode_hello(&hello), before[..used]);
    loop {
        match frame::read_data(&mut r, MAX_PAYLOAD) {
            Ok((at, payload)) => {
                assert!(payload.len() <= MAX_PAYLOAD);
                let again = frame::encode_data(at, &payload);
                assert_eq!(frame::read_data(&mut &again[..], MAX_PAYLOAD).unwrap().1, payload);
            }
            Err(ReadError::Refused(_)) | Err(ReadError::Io(_)) => break,
        }
    }
});
