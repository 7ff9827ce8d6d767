//! What a peer can make the node loop hold or do is bounded: fetches in flight (in all
//! and per announcer), block hashes remembered as refused, and a peer whose messages keep
//! failing to decode is cut and refused for a while. The orphan limits live with the
//! orphans ([`super::MAX_ORPHANS`], [`super::MAX_ORPHAN_BYTES`]).

use std::time::Duration;

use serde_json::json;

use super::Node;

/// Most blocks being fetched at once: a node keeping up fetches a few, one catching up
/// ranges instead; more are announcements no honest network makes this fast.
pub const MAX_FETCHES: usize = 1024;
/// Most of those one peer's announcements may start, so a peer announcing made-up
/// blocks cannot crowd out the others'.
pub const MAX_FETCHES_PER_PEER: usize = 64;
/// Refused block hashes remembered (the oldest is forgotten first; a forgotten one is
/// only validated again if announced again).
pub const MAX_REJECTED: usize = 4096;
/// Messages from one link that are not the protocol (do not decode, or a header or
/// block body that does not) before the node cuts it. An honest peer sends none.
pub const STRIKES: u32 = 64;
/// How long a peer cut for misbehaving is refused.
pub const MISBEHAVING_BAN: Duration = Duration::from_secs(5);

impl Node {
    /// A message from `peer` that is not the protocol (`what` says which): at
    /// [`STRIKES`] of them on its link the node cuts it for [`MISBEHAVING_BAN`],
    /// counts it and logs `peer_cut`.
    pub(super) fn strike(&mut self, peer: &str, what: &str) {
        let n = self.strikes.entry(peer.to_string()).or_default();
        *n += 1;
        if *n < STRIKES {
            return;
        }
        self.strikes.remove(peer);
        let reason = format!("{STRIKES} messages that are not the protocol (the last: {what})");
        *self.counters.peers_cut.entry(peer.to_string()).or_default() += 1;
        self.transport.disconnect(peer, &reason, MISBEHAVING_BAN);
        self.log.event(
            "peer_cut",
            json!({"peer": peer, "reason": reason, "ban_s": MISBEHAVING_BAN.as_secs_f64()}),
        );
    }

    /// A new link to `peer` starts with a clean record.
    pub(super) fn forgive(&mut self, peer: &str) {
        self.strikes.remove(peer);
    }

    /// Whether a new fetch announced by `peer` fits the bounds; counts `fetches_shed`
    /// when not.
    pub(super) fn fetch_fits(&mut self, peer: &str) -> bool {
        let of_peer = self
            .follower
            .fetching
            .values()
            .filter(|f| f.announcers.first().is_some_and(|a| a == peer))
            .count();
        if self.follower.fetching.len() >= MAX_FETCHES || of_peer >= MAX_FETCHES_PER_PEER {
            self.counters.fetches_shed += 1;
            return false;
        }
        true
    }
}
