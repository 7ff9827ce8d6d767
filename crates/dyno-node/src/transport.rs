//! The seam between the node and its network: what the node sends, what it receives,
//! and the peer protocol's messages.
//!
//! [`Transport`] sends payloads to peers by id; everything arriving (peer messages,
//! client transactions, link events) reaches the node loop as an [`Input`] on one
//! channel, so the loop blocks on a single receive and never polls. `dyno node` plugs
//! `dyno-net`'s TCP links and QUIC ingress in; [`MemHub`] links nodes of one process
//! through channels, for deterministic tests of everything above the transport.

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use crate::hash::Hash;

/// Sends to peers.
pub trait Transport: Send {
    /// Queues `payload` to `peer`; false when that peer is not connected.
    fn send(&self, peer: &str, payload: Vec<u8>) -> bool;

    /// Cuts the link to `peer` for misbehaving and refuses it for `ban`; false when the
    /// transport cannot (in-process channels have no link to cut).
    fn disconnect(&self, _peer: &str, _reason: &str, _ban: std::time::Duration) -> bool {
        false
    }

    /// The node loop has handled `bytes` of `peer`'s messages (a message, or a relay
    /// frame whose transactions were checked off the loop): a transport that bounds
    /// what a peer may have waiting for the loop (`dyno-net`'s inbound budget) lets
    /// that peer's link read that much more. Nothing to do for in-process channels.
    fn taken(&self, _peer: &str, _bytes: usize) {}
}

/// Something for the node loop.
#[derive(Debug)]
pub enum Input {
    /// A peer message.
    Peer {
        /// Sender's id.
        peer: String,
        /// The message bytes ([`Message`]).
        payload: Vec<u8>,
        /// Arrival, Unix ns.
        received_ns: u64,
    },
    /// A transaction from a client (ingress).
    Tx(Vec<u8>),
    /// A transaction from a client whose signature the ingress already checked.
    CheckedTx {
        /// The transaction.
        bytes: Vec<u8>,
        /// Its signature verified.
        signature_ok: bool,
    },
    /// A peer's relay frame whose signatures were checked off the node loop (the
    /// `relay_check` module): per transaction its verdict, none for one to check here (a
    /// repeat of one already sent to be checked).
    CheckedRelay {
        /// Sender's id.
        peer: String,
        /// The transactions, in the frame's order, with their verdicts.
        txs: Vec<(Vec<u8>, Option<bool>)>,
    },
    /// A link came up.
    Connected(String),
    /// A link went down.
    Disconnected {
        /// Peer id.
        peer: String,
        /// Why.
        reason: String,
    },
    /// The transport refused a connection (wrong genesis, garbage, unknown id ...).
    Refused {
        /// Remote address.
        remote: String,
        /// Why (snake_case).
        reason: String,
    },
    /// Stop the node.
    Stop,
}

/// A peer protocol message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// "I have this block": its encoded header.
    Header(Vec<u8>),
    /// "Send me the block with this hash."
    GetBlock(Hash),
    /// An encoded block (the answer to `GetBlock`).
    Block(Vec<u8>),
    /// A transaction relayed between mempools.
    Tx(Vec<u8>),
    /// Transactions relayed between mempools in one frame (what a node sends: several
    /// per frame cost one header, one syscall and one wake-up of the peer's loop).
    Txs(Vec<Vec<u8>>),
    /// "Send me the blocks of the chain ending at `to` that come after the newest of
    /// these, which I hold": a node behind (restarted, cut off) asks for a range at
    /// once instead of one parent per round trip. The locator is the asker's best chain,
    /// tip first, at exponentially spaced heights, so a fork point is found within a
    /// factor of two.
    GetChain {
        /// The newest block wanted (an announced header's hash).
        to: Hash,
        /// Hashes the asker holds, newest first.
        locator: Vec<Hash>,
    },
    /// Encoded blocks, oldest first, each a parent of the next (the answer to
    /// `GetChain`; empty when the peer does not hold `to`).
    Chain(Vec<Vec<u8>>),
}

impl Message {
    /// Encodes: a tag byte (1 header, 2 get block, 3 block, 4 transaction, 5 a batch of
    /// transactions, each as u16 little-endian length and its bytes, 6 get chain: `to`
    /// then the locator's hashes, 7 chain: each block as u32 little-endian length and
    /// its bytes) and the bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Message::GetChain { to, locator } => {
                let mut v = Vec::with_capacity(33 + 32 * locator.len());
                v.push(6);
                v.extend_from_slice(to.as_bytes());
                locator
                    .iter()
                    .for_each(|h| v.extend_from_slice(h.as_bytes()));
                return v;
            }
            Message::Chain(blocks) => {
                let mut v = vec![7];
                for b in blocks {
                    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    v.extend_from_slice(b);
                }
                return v;
            }
            _ => {}
        }
        if let Message::Txs(txs) = self {
            let mut v = Vec::with_capacity(1 + txs.iter().map(|t| t.len() + 2).sum::<usize>());
            v.push(5);
            for t in txs {
                v.extend_from_slice(&(t.len().min(u16::MAX as usize) as u16).to_le_bytes());
                v.extend_from_slice(&t[..t.len().min(u16::MAX as usize)]);
            }
            return v;
        }
        let (tag, body): (u8, &[u8]) = match self {
            Message::Header(b) => (1, b),
            Message::GetBlock(h) => (2, h.as_bytes()),
            Message::Block(b) => (3, b),
            Message::Tx(b) => (4, b),
            Message::Txs(_) | Message::GetChain { .. } | Message::Chain(_) => {
                unreachable!("encoded above")
            }
        };
        let mut v = Vec::with_capacity(1 + body.len());
        v.push(tag);
        v.extend_from_slice(body);
        v
    }

    /// The transactions of an encoded [`Message::Txs`]; none for any other message (or
    /// a malformed one, which [`Message::decode`] refuses alike).
    pub fn decode_txs(b: &[u8]) -> Option<Vec<Vec<u8>>> {
        match b.first() {
            Some(5) => match Message::decode(b)? {
                Message::Txs(txs) => Some(txs),
                _ => None,
            },
            _ => None,
        }
    }

    /// Decodes; none for an unknown tag or a wrong length.
    pub fn decode(b: &[u8]) -> Option<Message> {
        let (&tag, body) = b.split_first()?;
        Some(match tag {
            1 => Message::Header(body.to_vec()),
            2 => Message::GetBlock(body.try_into().ok()?),
            3 => Message::Block(body.to_vec()),
            4 => Message::Tx(body.to_vec()),
            5 => {
                let mut txs = Vec::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (len, r) = rest.split_first_chunk::<2>()?;
                    let len = u16::from_le_bytes(*len) as usize;
                    if r.len() < len {
                        return None;
                    }
                    let (t, r) = r.split_at(len);
                    txs.push(t.to_vec());
                    rest = r;
                }
                Message::Txs(txs)
            }
            6 if body.len() >= 32 && body.len() % 32 == 0 => {
                let mut hashes = body
                    .chunks_exact(32)
                    .map(|c| <Hash>::try_from(c).expect("32-byte chunk"));
                let to = hashes.next()?;
                Message::GetChain {
                    to,
                    locator: hashes.collect(),
                }
            }
            7 => {
                let mut blocks = Vec::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (len, r) = rest.split_first_chunk::<4>()?;
                    let len = u32::from_le_bytes(*len) as usize;
                    if r.len() < len {
                        return None;
                    }
                    let (b, r) = r.split_at(len);
                    blocks.push(b.to_vec());
                    rest = r;
                }
                Message::Chain(blocks)
            }
            _ => return None,
        })
    }
}

/// Channels between nodes of one process, keyed by node id.
#[derive(Debug, Clone, Default)]
pub struct MemHub {
    inboxes: Arc<Mutex<HashMap<String, Sender<Input>>>>,
}

impl MemHub {
    /// A hub without nodes.
    pub fn new() -> MemHub {
        MemHub::default()
    }

    /// Registers `id`'s inbox; returns its transport, linked to `peers` only.
    pub fn join(&self, id: &str, inbox: Sender<Input>, peers: &[&str]) -> MemTransport {
        self.inboxes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), inbox);
        MemTransport {
            id: id.to_string(),
            peers: peers.iter().map(|p| p.to_string()).collect(),
            hub: self.clone(),
        }
    }

    /// Delivers `payload` to `to` as if `from` sent it (tests play a misbehaving peer).
    pub fn deliver(&self, from: &str, to: &str, payload: Vec<u8>) -> bool {
        let g = self.inboxes.lock().unwrap_or_else(|p| p.into_inner());
        g.get(to).is_some_and(|tx| {
            tx.send(Input::Peer {
                peer: from.to_string(),
                payload,
                received_ns: crate::log::now_ns(),
            })
            .is_ok()
        })
    }
}

/// One node's side of a [`MemHub`].
#[derive(Debug)]
pub struct MemTransport {
    id: String,
    peers: Vec<String>,
    hub: MemHub,
}

impl Transport for MemTransport {
    fn send(&self, peer: &str, payload: Vec<u8>) -> bool {
        self.peers.iter().any(|p| p == peer) && self.hub.deliver(&self.id, peer, payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_junk_is_refused() {
        for m in [
            Message::Header(vec![1, 2]),
            Message::GetBlock(Hash([7; 32])),
            Message::Block(vec![]),
            Message::Tx(vec![9; 154]),
            Message::Txs(vec![vec![1; 154], vec![], vec![2; 3]]),
            Message::Txs(vec![]),
            Message::GetChain {
                to: Hash([3; 32]),
                locator: vec![Hash([4; 32]), Hash([5; 32])],
            },
            Message::GetChain {
                to: Hash([3; 32]),
                locator: vec![],
            },
            Message::Chain(vec![vec![1; 70_000], vec![], vec![2]]),
            Message::Chain(vec![]),
        ] {
            assert_eq!(Message::decode(&m.encode()), Some(m));
        }
        assert_eq!(Message::decode(&[]), None);
        assert_eq!(Message::decode(&[9, 1]), None);
        assert_eq!(Message::decode(&[2, 1, 2]), None);
        assert_eq!(Message::decode(&[5, 3, 0, 1, 2]), None, "a batch cut short");
        assert_eq!(Message::decode(&[5, 3]), None);
        assert_eq!(Message::decode(&[6; 40]), None, "a locator hash cut short");
        assert_eq!(
            Message::decode(&[7, 9, 0, 0, 0, 1]),
            None,
            "a block cut short"
        );
    }
}
