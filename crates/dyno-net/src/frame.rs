//! The peer wire format.
//!
//! ```text
//! connection := preamble frame*            (each side sends its own preamble first)
//! preamble   := "DYNOPEER" version:u16be   (10 bytes, not framed, so garbage is caught
//!                                          before any length is trusted)
//! frame      := len:u32be body[len]
//! body       := 0x01 status:u8 genesis[32] id_len:u8 id[id_len]      hello (first frame)
//!             | 0x02 deliver_at_ns:u64be payload                      data
//! ```
//! The dialer sends its hello with status 0; the acceptor answers with its own hello,
//! status 0 (accepted) or a [`RefuseReason`] code (then closes). `deliver_at_ns` is the
//! unix-ns time the shaped link lets the frame out at the far side (0 = unshaped).

use std::io::{self, Read, Write};

/// First bytes of every peer connection.
pub const MAGIC: [u8; 8] = *b"DYNOPEER";
/// Version of this wire format; a different one is refused as `bad_version`.
pub const VERSION: u16 = 1;
/// Bytes of the preamble.
pub const PREAMBLE_LEN: usize = 10;
/// Largest possible hello body.
pub const MAX_HELLO: usize = 1 + 1 + 32 + 1 + 255;
/// Bytes a data frame adds to its payload on the wire (length, kind, delivery time).
pub const DATA_OVERHEAD: usize = 4 + 1 + 8;

const KIND_HELLO: u8 = 1;
const KIND_DATA: u8 = 2;

/// Why a connection was refused or cut for breaking the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefuseReason {
    /// Bytes that are not this protocol (wrong magic, unknown frame kind, bad hello).
    Garbage,
    /// A frame longer than the configured limit.
    Oversized,
    /// A hello carrying another genesis hash: a node of another network.
    WrongGenesis,
    /// A hello from a node id that is not in the peer list (or is this node's own).
    UnknownPeer,
    /// The right magic with another protocol version.
    BadVersion,
    /// The address dialed answered with another node id than the peer list gives it.
    WrongPeer,
    /// The remote did not complete its handshake in time.
    HandshakeTimeout,
    /// The remote refused this node's hello for a reason it has counted on its side.
    RemoteRefused,
    /// A well-formed frame that breaks a rule of the protocol: a delivery time further
    /// ahead than the link could hold a frame.
    Protocol,
    /// A peer this node cut for misbehaving, back before its ban ran out
    /// ([`PeerNet::disconnect`](crate::PeerNet::disconnect)).
    Banned,
}

impl RefuseReason {
    /// Every reason, so a metrics endpoint can export each one from zero: a counter that
    /// first appears at 1 hides its first refusal from `increase()` and alerts.
    pub const ALL: [RefuseReason; 9] = [
        RefuseReason::Garbage,
        RefuseReason::Oversized,
        RefuseReason::WrongGenesis,
        RefuseReason::UnknownPeer,
        RefuseReason::BadVersion,
        RefuseReason::WrongPeer,
        RefuseReason::HandshakeTimeout,
        RefuseReason::RemoteRefused,
        RefuseReason::Protocol,
    ];

    /// Stable snake_case name for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            RefuseReason::Garbage => "garbage",
            RefuseReason::Oversized => "oversized",
            RefuseReason::WrongGenesis => "wrong_genesis",
            RefuseReason::UnknownPeer => "unknown_peer",
            RefuseReason::BadVersion => "bad_version",
            RefuseReason::WrongPeer => "wrong_peer",
            RefuseReason::HandshakeTimeout => "handshake_timeout",
            RefuseReason::RemoteRefused => "remote_refused",
            RefuseReason::Protocol => "protocol",
            RefuseReason::Banned => "banned",
        }
    }

    fn code(self) -> u8 {
        match self {
            RefuseReason::Garbage => 1,
            RefuseReason::Oversized => 2,
            RefuseReason::WrongGenesis => 3,
            RefuseReason::UnknownPeer => 4,
            RefuseReason::BadVersion => 5,
            RefuseReason::WrongPeer => 6,
            RefuseReason::HandshakeTimeout => 7,
            RefuseReason::RemoteRefused => 8,
            RefuseReason::Protocol => 9,
            RefuseReason::Banned => 10,
        }
    }
}

impl std::fmt::Display for RefuseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decoded hello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// 0 = accepted / request; otherwise the code of the acceptor's refusal.
    pub status: u8,
    /// The sender's genesis hash.
    pub genesis: [u8; 32],
    /// The sender's node id.
    pub node_id: String,
}

impl Hello {
    /// The refusal the status carries, if any.
    pub fn refusal(&self) -> Option<RefuseReason> {
        (self.status != 0).then_some(RefuseReason::RemoteRefused)
    }

    /// A hello refusing for `reason`.
    pub fn refusing(reason: RefuseReason, genesis: [u8; 32], node_id: &str) -> Hello {
        Hello {
            status: reason.code(),
            genesis,
            node_id: node_id.to_string(),
        }
    }
}

/// Why reading a frame failed.
#[derive(Debug)]
pub enum ReadError {
    /// The stream ended or failed (a timeout shows as WouldBlock/TimedOut).
    Io(io::Error),
    /// A protocol violation.
    Refused(RefuseReason),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// The preamble bytes.
pub fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut p = [0u8; PREAMBLE_LEN];
    p[..8].copy_from_slice(&MAGIC);
    p[8..].copy_from_slice(&VERSION.to_be_bytes());
    p
}

/// Reads and checks the remote's preamble.
pub fn read_preamble(r: &mut impl Read) -> Result<(), ReadError> {
    let mut p = [0u8; PREAMBLE_LEN];
    r.read_exact(&mut p)?;
    check_preamble(&p)
}

fn check_preamble(p: &[u8; PREAMBLE_LEN]) -> Result<(), ReadError> {
    if p[..8] != MAGIC {
        return Err(ReadError::Refused(RefuseReason::Garbage));
    }
    if u16::from_be_bytes([p[8], p[9]]) != VERSION {
        return Err(ReadError::Refused(RefuseReason::BadVersion));
    }
    Ok(())
}

/// Encodes a hello as a frame (node ids longer than 255 bytes are cut: they are refused
/// as unknown by any peer list anyway).
pub fn encode_hello(h: &Hello) -> Vec<u8> {
    let id = &h.node_id.as_bytes()[..h.node_id.len().min(255)];
    let body_len = 1 + 1 + 32 + 1 + id.len();
    let mut f = Vec::with_capacity(4 + body_len);
    f.extend_from_slice(&(body_len as u32).to_be_bytes());
    f.push(KIND_HELLO);
    f.push(h.status);
    f.extend_from_slice(&h.genesis);
    f.push(id.len() as u8);
    f.extend_from_slice(id);
    f
}

/// Reads one hello frame.
pub fn read_hello(r: &mut impl Read) -> Result<Hello, ReadError> {
    let body = read_body(r, MAX_HELLO)?;
    hello_of(&body)
}

fn hello_of(body: &[u8]) -> Result<Hello, ReadError> {
    decode_hello(body).ok_or(ReadError::Refused(RefuseReason::Garbage))
}

fn decode_hello(b: &[u8]) -> Option<Hello> {
    if b.len() < 35 || b[0] != KIND_HELLO {
        return None;
    }
    let id_len = usize::from(b[34]);
    if b.len() != 35 + id_len {
        return None;
    }
    let node_id = std::str::from_utf8(&b[35..]).ok()?.to_string();
    Some(Hello {
        status: b[1],
        genesis: b[2..34].try_into().ok()?,
        node_id,
    })
}

/// Encodes a data frame.
pub fn encode_data(deliver_at_ns: u64, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(DATA_OVERHEAD + payload.len());
    f.extend_from_slice(&((1 + 8 + payload.len()) as u32).to_be_bytes());
    f.push(KIND_DATA);
    f.extend_from_slice(&deliver_at_ns.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Reads one data frame whose payload may be up to `max_payload` bytes; returns the
/// delivery time and the payload.
pub fn read_data(r: &mut impl Read, max_payload: usize) -> Result<(u64, Vec<u8>), ReadError> {
    let body = read_body(r, max_payload.saturating_add(9))?;
    data_of(body)
}

fn data_of(mut body: Vec<u8>) -> Result<(u64, Vec<u8>), ReadError> {
    if body.len() < 9 || body[0] != KIND_DATA {
        return Err(ReadError::Refused(RefuseReason::Garbage));
    }
    let mut at = [0u8; 8];
    at.copy_from_slice(&body[1..9]);
    body.drain(..9);
    Ok((u64::from_be_bytes(at), body))
}

fn read_body(r: &mut impl Read, max_len: usize) -> Result<Vec<u8>, ReadError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut body = vec![0u8; body_len(len, max_len)?];
    r.read_exact(&mut body)?;
    Ok(body)
}

/// The body length a frame header announces, refused past `max_len` before any of the
/// body is read or allocated.
fn body_len(header: [u8; 4], max_len: usize) -> Result<usize, ReadError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > max_len {
        return Err(ReadError::Refused(RefuseReason::Oversized));
    }
    Ok(len)
}

/// The same readers over tokio's streams, for the peer network's I/O thread: the wire
/// format and every check are the ones above.
pub(crate) mod nonblocking {
    use super::{
        body_len, check_preamble, data_of, encode_hello, hello_of, preamble, Hello, ReadError,
        MAX_HELLO, PREAMBLE_LEN,
    };
    use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

    /// [`super::read_preamble`].
    pub(crate) async fn read_preamble(r: &mut (impl AsyncRead + Unpin)) -> Result<(), ReadError> {
        let mut p = [0u8; PREAMBLE_LEN];
        r.read_exact(&mut p).await?;
        check_preamble(&p)
    }

    /// [`super::read_hello`].
    pub(crate) async fn read_hello(r: &mut (impl AsyncRead + Unpin)) -> Result<Hello, ReadError> {
        hello_of(&read_body(r, MAX_HELLO).await?)
    }

    /// [`super::read_data`].
    pub(crate) async fn read_data(
        r: &mut (impl AsyncRead + Unpin),
        max_payload: usize,
    ) -> Result<(u64, Vec<u8>), ReadError> {
        data_of(read_body(r, max_payload.saturating_add(9)).await?)
    }

    async fn read_body(
        r: &mut (impl AsyncRead + Unpin),
        max_len: usize,
    ) -> Result<Vec<u8>, ReadError> {
        let mut len = [0u8; 4];
        r.read_exact(&mut len).await?;
        let mut body = vec![0u8; body_len(len, max_len)?];
        r.read_exact(&mut body).await?;
        Ok(body)
    }

    /// [`super::write_opening`].
    pub(crate) async fn write_opening(
        w: &mut (impl AsyncWrite + Unpin),
        h: &Hello,
    ) -> std::io::Result<()> {
        let mut b = preamble().to_vec();
        b.extend_from_slice(&encode_hello(h));
        w.write_all(&b).await?;
        w.flush().await
    }
}

/// Writes the preamble and a hello in one write (one segment on loopback).
pub fn write_opening(w: &mut impl Write, h: &Hello) -> io::Result<()> {
    let mut b = preamble().to_vec();
    b.extend_from_slice(&encode_hello(h));
    w.write_all(&b)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips() {
        let h = Hello {
            status: 0,
            genesis: [7; 32],
            node_id: "node-3".into(),
        };
        let mut wire = Vec::new();
        write_opening(&mut wire, &h).unwrap();
        let mut r = &wire[..];
        read_preamble(&mut r).unwrap();
        assert_eq!(read_hello(&mut r).unwrap(), h);
        assert!(r.is_empty());
    }

    #[test]
    fn data_round_trips_and_limits_apply_to_payload() {
        let f = encode_data(42, b"abcdef");
        assert_eq!(f.len(), DATA_OVERHEAD + 6);
        assert_eq!(read_data(&mut &f[..], 6).unwrap(), (42, b"abcdef".to_vec()));
        assert!(matches!(
            read_data(&mut &f[..], 5),
            Err(ReadError::Refused(RefuseReason::Oversized))
        ));
    }

    #[test]
    fn garbage_and_versions_are_told_apart() {
        let mut bad = preamble();
        bad[0] = b'X';
        assert!(matches!(
            read_preamble(&mut &bad[..]),
            Err(ReadError::Refused(RefuseReason::Garbage))
        ));
        let mut v2 = preamble();
        v2[9] = 2;
        assert!(matches!(
            read_preamble(&mut &v2[..]),
            Err(ReadError::Refused(RefuseReason::BadVersion))
        ));
        // A hello frame whose id length disagrees with the body.
        let mut h = encode_hello(&Hello {
            status: 0,
            genesis: [0; 32],
            node_id: "ab".into(),
        });
        h[4 + 34] = 5;
        assert!(matches!(
            read_hello(&mut &h[..]),
            Err(ReadError::Refused(RefuseReason::Garbage))
        ));
        // A data frame where a hello is expected, and vice versa.
        let d = encode_data(0, &[0; 40]);
        assert!(matches!(
            read_hello(&mut &d[..]),
            Err(ReadError::Refused(RefuseReason::Garbage))
        ));
    }
}
