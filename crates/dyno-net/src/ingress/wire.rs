//! The ingress protocol's bytes (see the parent module's grammar), read and written
//! without I/O: the hello, the stream's frames and end mark, the server's progress
//! messages. The server and the client read through these, and the fuzz target
//! `ingress_wire` feeds them arbitrary bytes.

use super::{END_MARK, HELLO_LEN, HELLO_MAGIC, HELLO_VERSION, PROGRESS_LEN};

/// The hello a client of the chain with `genesis` sends.
pub fn hello(genesis: &[u8; 32]) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..8].copy_from_slice(&HELLO_MAGIC);
    h[8..10].copy_from_slice(&HELLO_VERSION.to_be_bytes());
    h[10..].copy_from_slice(genesis);
    h
}

/// Whether `got` is the hello of this protocol version for `genesis`, exactly.
pub fn accepts_hello(got: &[u8], genesis: &[u8; 32]) -> bool {
    got == hello(genesis)
}

/// What the front of a client's stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framed {
    /// A transaction of `len` bytes after its 4-byte length.
    Frame {
        /// The transaction's bytes.
        len: usize,
    },
    /// The end mark with the count of transactions the client sent (12 bytes in all).
    End {
        /// Transactions the client sent.
        sent: u64,
    },
    /// A length over the limit: the connection is closed, the rest never read.
    Oversized {
        /// The length the frame claims.
        len: usize,
    },
    /// Not a whole frame or end mark yet.
    Incomplete,
}

impl Framed {
    /// Bytes of the stream the item takes (0 for [`Framed::Incomplete`] and
    /// [`Framed::Oversized`]).
    pub fn bytes(&self) -> usize {
        match self {
            Framed::Frame { len } => 4 + len,
            Framed::End { .. } => 12,
            Framed::Oversized { .. } | Framed::Incomplete => 0,
        }
    }
}

/// The item at the front of `buf`, with frames longer than `max_frame` refused: a
/// length over the limit is refused as soon as its 4 bytes are in, before its bytes are
/// waited for.
pub fn next_frame(buf: &[u8], max_frame: usize) -> Framed {
    let Some(head) = buf.first_chunk::<4>() else {
        return Framed::Incomplete;
    };
    let len = u32::from_be_bytes(*head);
    if len == END_MARK {
        return match buf.get(4..12) {
            Some(sent) => Framed::End {
                sent: u64::from_be_bytes(sent.try_into().expect("8 bytes")),
            },
            None => Framed::Incomplete,
        };
    }
    let len = len as usize;
    if len > max_frame {
        return Framed::Oversized { len };
    }
    if buf.len() - 4 < len {
        return Framed::Incomplete;
    }
    Framed::Frame { len }
}

/// A frame as a client writes it: its length, then its bytes (a transaction is shorter
/// than the end mark's length: the client refuses longer ones).
pub fn encode_frame(tx: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + tx.len());
    out.extend_from_slice(&(tx.len() as u32).to_be_bytes());
    out.extend_from_slice(tx);
    out
}

/// The end mark with the client's sent count.
pub fn encode_end(sent: u64) -> [u8; 12] {
    let mut out = [0u8; 12];
    out[..4].copy_from_slice(&END_MARK.to_be_bytes());
    out[4..].copy_from_slice(&sent.to_be_bytes());
    out
}

/// A server's progress message: (accepted, refused) so far.
pub fn progress(m: &[u8; PROGRESS_LEN]) -> (u64, u64) {
    let word = |i: usize| u64::from_be_bytes(m[i..i + 8].try_into().expect("8 bytes"));
    (word(0), word(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_the_end_mark_are_read_as_written() {
        let mut stream = encode_frame(b"tx-one");
        stream.extend(encode_frame(b""));
        stream.extend(encode_end(2));
        let mut at = 0;
        let mut items = Vec::new();
        loop {
            let item = next_frame(&stream[at..], 64);
            items.push(item);
            if item.bytes() == 0 || matches!(item, Framed::End { .. }) {
                break;
            }
            at += item.bytes();
        }
        assert_eq!(
            items,
            [
                Framed::Frame { len: 6 },
                Framed::Frame { len: 0 },
                Framed::End { sent: 2 }
            ]
        );
        // Half a frame waits; a length over the limit is refused before its bytes come.
        assert_eq!(
            next_frame(&encode_frame(b"tx-one")[..7], 64),
            Framed::Incomplete
        );
        assert_eq!(next_frame(&encode_end(9)[..11], 64), Framed::Incomplete);
        assert_eq!(
            next_frame(&1000u32.to_be_bytes(), 64),
            Framed::Oversized { len: 1000 }
        );
    }

    #[test]
    fn only_the_exact_hello_is_accepted() {
        let g = [7u8; 32];
        assert!(accepts_hello(&hello(&g), &g));
        assert!(!accepts_hello(&hello(&[8u8; 32]), &g));
        assert!(!accepts_hello(&hello(&g)[..41], &g));
        let mut old = hello(&g);
        old[9] ^= 3;
        assert!(!accepts_hello(&old, &g));
    }
}
