//! The limits of a [`PeerNet`](super::PeerNet) beyond its identity, and the report of a
//! peer that is expected to dial in and does not.

use std::time::Duration;

use crate::shape::TimerPrecision;

/// Limits and knobs of a peer network; [`PeerOptions::default`] suits a node.
///
/// Kept apart from [`PeerConfig`](super::PeerConfig) (who the node is) so code that builds
/// a `PeerConfig` by its fields keeps compiling when a limit is added here.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PeerOptions {
    /// Bytes (frames with their framing) queued to one peer and not yet written to its
    /// socket. A peer that stops reading while it keeps asking for blocks would otherwise
    /// grow this node's memory without bound: past this, `send` returns false and the
    /// link is cut as a slow peer (`slow_peers`). A frame into an empty queue always fits.
    pub max_queued_bytes: usize,
    /// Bytes of one peer's messages read from its link and not yet taken by the node
    /// (held by the shaping timer, waiting in [`PeerEvents`](super::PeerEvents), or, on
    /// a caller's runtime, handed over and not yet given back with
    /// [`PeerNet::taken`](super::PeerNet::taken)). Past this the link's reader stops reading until the node takes some,
    /// so a peer that sends faster than the node works (a flood) fills its own TCP
    /// window instead of this node's memory. A message into an empty budget always fits.
    pub max_inbound_bytes: usize,
    /// How long a peer whose link broke the framing (an oversized frame, bytes that are
    /// no frame, a delivery time too far ahead) is refused (`banned`) and not dialed:
    /// an honest node never does, and a peer that does would otherwise reconnect at once
    /// and do it again.
    pub ban_after_violation: Duration,
    /// Inbound connections in their handshake at once. One more makes room by closing
    /// the oldest that has sent nothing yet (else the oldest; counted `handshakes_shed`),
    /// so a flood of idle connections cannot lock a peer out, nor hold a task and a
    /// descriptor each for the whole handshake timeout (a connection must send its first
    /// byte within 2 s anyway).
    pub max_handshakes: usize,
    /// Inbound connections in their handshake at once from one address; past it, one more
    /// from that address makes room among that address's own, the same way.
    pub max_handshakes_per_source: usize,
    /// How far past now (plus this node's configured latency to the peer and the frame's
    /// serialisation at that link's bandwidth) a frame's delivery time may lie. A later one
    /// would hold that message, and every later one on the link, that long, so it cuts the
    /// link as a protocol violation (`protocol`).
    pub max_delivery_ahead: Duration,
    /// How long a listed peer with a smaller id (it dials, this node only accepts) may stay
    /// unlinked before [`PeerNet::awaiting_dial`](super::PeerNet::awaiting_dial) names it.
    pub dial_grace: Duration,
    /// How the shaping timer waits. Not real-time by default: see
    /// [`TimerPrecision::realtime`].
    pub timer: TimerPrecision,
}

impl Default for PeerOptions {
    /// 64 MiB queued per peer, 16 MiB read ahead of the node per peer, a 5 s ban after a
    /// framing violation, 64 handshakes (32 from one address), 60 s ahead, 5 s grace, the
    /// default timer.
    fn default() -> Self {
        PeerOptions {
            max_queued_bytes: 64 << 20,
            max_inbound_bytes: 16 << 20,
            ban_after_violation: Duration::from_secs(5),
            max_handshakes: 64,
            max_handshakes_per_source: 32,
            max_delivery_ahead: Duration::from_secs(60),
            dial_grace: Duration::from_secs(5),
            timer: TimerPrecision::default(),
        }
    }
}

/// A listed peer that should dial this node (its id is the smaller of the pair) and has
/// not been linked for longer than [`PeerOptions::dial_grace`].
///
/// Only the smaller id of a pair dials, so when only the larger one lists the other no
/// link ever forms and neither side sees an error: this is how it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DialWait {
    /// The peer's id.
    pub peer: String,
    /// Since start, or since its last link went away.
    pub waited: Duration,
}

impl std::fmt::Display for DialWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "waiting for {} to dial us for {:.1} s (it must list this node: of two peers \
             only the smaller id dials)",
            self.peer,
            self.waited.as_secs_f64()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dial_wait_says_who_must_list_whom() {
        let w = DialWait {
            peer: "node-1".into(),
            waited: Duration::from_millis(5_300),
        };
        assert_eq!(
            w.to_string(),
            "waiting for node-1 to dial us for 5.3 s (it must list this node: of two peers \
             only the smaller id dials)"
        );
    }

    #[test]
    fn the_default_timer_is_not_real_time() {
        // SCHED_FIFO in every node of a 52-node cluster on 2 cores risks starving them.
        assert!(!PeerOptions::default().timer.realtime);
    }
}
