//! The node's metrics: its status (chain, blocks, client transactions, forge stages), its
//! QUIC ingress and its peer network, as Prometheus families declared once here and
//! written by dyno-obs' one writer (which escapes label values). The endpoint that
//! serves them is [`crate::service`]'s.

use dyno_net::{IngressCounters, PeerNet};
use dyno_obs::{Desc, TextWriter};
use dyno_tiles::node_metrics::STAGES;

use crate::node::Status;

type StatusFamily = (Desc, fn(&Status) -> u64);

/// The families before the rejections, one sample each.
const CHAIN: [StatusFamily; 5] = [
    (
        Desc::gauge("dyno_node_height", "Height of the chosen tip."),
        |s| s.height,
    ),
    (
        Desc::gauge(
            "dyno_node_mempool_transactions",
            "Transactions waiting in the mempool.",
        ),
        |s| s.mempool as u64,
    ),
    (
        Desc::counter("dyno_node_blocks_forged_total", "Blocks this node forged."),
        |s| s.counters.forged,
    ),
    (
        Desc::counter(
            "dyno_node_blocks_adopted_total",
            "Blocks adopted (forged here or fetched).",
        ),
        |s| s.counters.adopted,
    ),
    (
        Desc::counter(
            "dyno_node_fork_switches_total",
            "Times the tip moved to another branch (a fork switch).",
        ),
        |s| s.counters.fork_switches,
    ),
];

const REJECTED: Desc = Desc::counter(
    "dyno_node_blocks_rejected_total",
    "Blocks that failed validation, by reason.",
)
.labels(&["reason"]);

/// The families between the rejections and the client transactions, one sample each.
const BLOCK_FLOW: [StatusFamily; 16] = [
    (
        Desc::counter(
            "dyno_node_headers_received_total",
            "Block headers received from peers.",
        ),
        |s| s.counters.headers_received,
    ),
    (
        Desc::counter(
            "dyno_node_block_fetches_total",
            "Block bodies asked of peers.",
        ),
        |s| s.counters.fetches,
    ),
    (
        Desc::counter(
            "dyno_node_block_fetches_abandoned_total",
            "Blocks given up on after every request went unanswered.",
        ),
        |s| s.counters.fetches_abandoned,
    ),
    (
        Desc::counter(
            "dyno_node_headers_ignored_total",
            "Headers not fetched: slot not begun, leader not scheduled, or too far below the tip.",
        ),
        |s| s.counters.headers_ignored,
    ),
    (
        Desc::counter(
            "dyno_node_orphans_dropped_total",
            "Blocks dropped because the most allowed already waited for their parents.",
        ),
        |s| s.counters.orphans_dropped,
    ),
    (
        Desc::counter(
            "dyno_node_bad_block_bodies_total",
            "Block bodies from peers that failed validation or did not decode.",
        ),
        |s| s.counters.bad_bodies.values().sum(),
    ),
    (
        Desc::counter(
            "dyno_node_blocks_forged_by_tiles_total",
            "Blocks the leader pipeline's tiles forged (the rest: the sequential bank).",
        ),
        |s| s.counters.forged_by_tiles,
    ),
    (
        Desc::counter(
            "dyno_node_forge_fallbacks_total",
            "Slots the tiles could not forge, forged by the sequential bank instead.",
        ),
        |s| s.counters.forge_fallbacks,
    ),
    (
        Desc::counter(
            "dyno_node_forge_unrecorded_transactions_total",
            "Snapshot transactions the tiles had not recorded when their block was cut.",
        ),
        |s| s.counters.forge_unrecorded,
    ),
    (
        Desc::counter(
            "dyno_node_malformed_blocks_total",
            "Block bodies from peers that were not a block at all (refused, not rejected).",
        ),
        |s| s.counters.malformed_blocks,
    ),
    (
        Desc::counter(
            "dyno_node_block_fetched_bytes_total",
            "Bytes of block bodies fetched.",
        ),
        |s| s.counters.fetched_bytes,
    ),
    (
        Desc::counter(
            "dyno_node_transactions_relayed_total",
            "Transactions relayed to peers.",
        ),
        |s| s.counters.relayed,
    ),
    (
        Desc::counter(
            "dyno_node_block_fetches_shed_total",
            "Announced blocks not fetched: the most fetches allowed (in all or per announcer) were in flight.",
        ),
        |s| s.counters.fetches_shed,
    ),
    (
        Desc::counter(
            "dyno_node_equivocations_total",
            "Equivocations recorded: a second valid block of a slot, logged with both signed headers.",
        ),
        |s| s.counters.equivocations,
    ),
    (
        Desc::counter(
            "dyno_node_peers_cut_total",
            "Peer links cut for sending messages that are not the protocol.",
        ),
        |s| s.counters.peers_cut.values().sum(),
    ),
    (
        Desc::counter(
            "dyno_node_bad_messages_total",
            "Peer messages that are not the protocol (do not decode).",
        ),
        |s| s.counters.bad_messages,
    ),
];

const CLIENT_TRANSACTIONS: Desc = Desc::counter(
    "dyno_node_client_transactions_total",
    "Client transactions by fate (received = the sum of the others + in flight).",
)
.labels(&["fate"]);
const CLIENT_IN_FLIGHT: Desc = Desc::gauge(
    "dyno_node_client_transactions_in_flight",
    "Client transactions still in the mempool.",
);
const FORGE_STAGE_LAST: Desc = Desc::gauge(
    "dyno_node_forge_stage_seconds_last",
    "The last forged block's time in each stage.",
)
.labels(&["stage"]);
const VALIDATE_LAST: Desc = Desc::gauge(
    "dyno_node_validate_seconds_last",
    "The last fetched block's validation and replay time.",
);

const INGRESS_TRANSACTIONS: Desc = Desc::counter(
    "dyno_node_ingress_transactions_total",
    "Transactions at the QUIC ingress by fate (accepted ones are handed to the mempool).",
)
.labels(&["fate"]);

const INGRESS_REFUSED: Desc = Desc::counter(
    "dyno_node_ingress_refused_total",
    "Client transactions refused before any signature check (graceful overload), by \
     reason: the mempool and what is on its way to it were full, or too many were queued.",
)
.labels(&["reason"]);

type IngressFamily = (Desc, fn(&IngressCounters) -> u64);

const INGRESS: [IngressFamily; 7] = [
    (
        Desc::counter(
            "dyno_node_ingress_bytes_total",
            "Transaction bytes received at the QUIC ingress.",
        ),
        |c| c.bytes,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_connections_total",
            "QUIC clients that completed their hello.",
        ),
        |c| c.connections,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_unknown_clients_total",
            "QUIC clients refused (wrong ALPN or genesis).",
        ),
        |c| c.unknown_clients,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_connections_refused_total",
            "QUIC client connections refused because the most allowed were being served.",
        ),
        |c| c.connections_refused,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_paused_total",
            "Times a QUIC client's stream was paused, not read, while the node had no room.",
        ),
        |c| c.paused,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_throttled_total",
            "Times a QUIC client's stream waited because its connection was above ingress_tps_per_connection.",
        ),
        |c| c.throttled,
    ),
    (
        Desc::counter(
            "dyno_node_ingress_over_rate_total",
            "QUIC datagrams refused, never offered to the node, because their connection was above ingress_tps_per_connection.",
        ),
        |c| c.over_rate,
    ),
];

type PeerFamily = (Desc, fn(&dyno_net::PeerCounters) -> u64);

const PEER_TRAFFIC: [PeerFamily; 7] = [
    (
        Desc::counter("dyno_node_peer_frames_out_total", "Frames sent to peers."),
        |c| c.frames_out,
    ),
    (
        Desc::counter(
            "dyno_node_peer_bytes_out_total",
            "Payload bytes sent to peers.",
        ),
        |c| c.bytes_out,
    ),
    (
        Desc::counter(
            "dyno_node_peer_frames_in_total",
            "Frames received from peers.",
        ),
        |c| c.frames_in,
    ),
    (
        Desc::counter(
            "dyno_node_peer_bytes_in_total",
            "Payload bytes received from peers.",
        ),
        |c| c.bytes_in,
    ),
    (
        Desc::counter(
            "dyno_node_peer_fault_dropped_total",
            "Frames to peers a link fault lost or a cut link swallowed (the control file).",
        ),
        |c| c.fault_dropped,
    ),
    (
        Desc::counter(
            "dyno_node_peer_slow_cut_total",
            "Peer links cut because the peer did not read what was queued to it.",
        ),
        |c| c.slow_peers,
    ),
    (
        Desc::counter(
            "dyno_node_peer_inbound_paused_total",
            "Times a link's reader paused: its peer had the most bytes allowed read and not yet handled.",
        ),
        |c| c.inbound_paused,
    ),
];

const PEER_CONNECTED: Desc = Desc::gauge("dyno_node_peer_connected", "Peers linked now.");
const PEER_REFUSED: Desc = Desc::counter(
    "dyno_node_peer_refused_total",
    "Peer connections refused or cut, by reason.",
)
.labels(&["reason"]);

/// The Prometheus text of a node's status and its peer network's counters.
pub fn metrics_text(
    s: Option<&Status>,
    net: Option<&PeerNet>,
    ingress: Option<&IngressCounters>,
) -> String {
    let mut w = TextWriter::new();
    if let Some(s) = s {
        status_families(&mut w, s);
    }
    if let Some(c) = ingress {
        ingress_families(&mut w, c);
    }
    if let Some(n) = net {
        peer_families(&mut w, n);
    }
    w.finish()
}

fn status_families(w: &mut TextWriter, s: &Status) {
    let c = &s.counters;
    for (desc, value) in &CHAIN {
        w.single(desc, value(s));
    }
    let mut f = w.family(&REJECTED);
    for r in crate::chain::Reject::ALL {
        f.sample(&[r.name()], c.rejected.get(r.name()).copied().unwrap_or(0));
    }
    for (desc, value) in &BLOCK_FLOW {
        w.single(desc, value(s));
    }
    let t = &s.fates;
    let mut f = w.family(&CLIENT_TRANSACTIONS);
    for (fate, n) in [
        ("received", t.received),
        ("malformed", t.malformed),
        ("invalid_signature", t.invalid_signature),
        ("duplicate", t.duplicate),
        ("dropped_full", t.dropped_full),
        ("executed", t.executed),
        ("failed", t.failed),
    ] {
        f.sample(&[fate], n);
    }
    w.single(&CLIENT_IN_FLIGHT, t.in_flight);
    let mut f = w.family(&FORGE_STAGE_LAST);
    for (stage, secs) in STAGES.into_iter().zip(c.last_forge_stages_s) {
        f.sample(&[stage], secs);
    }
    w.single(&VALIDATE_LAST, c.last_validate_s);
    if !c.ingress_refused.is_empty() {
        let mut f = w.family(&INGRESS_REFUSED);
        for r in [
            crate::admission::Refusal::MempoolFull,
            crate::admission::Refusal::QueueFull,
        ] {
            f.sample(
                &[r.name()],
                c.ingress_refused.get(r.name()).copied().unwrap_or(0),
            );
        }
    }
}

fn ingress_families(w: &mut TextWriter, c: &IngressCounters) {
    let mut f = w.family(&INGRESS_TRANSACTIONS);
    for (fate, n) in [
        ("accepted", c.accepted),
        ("dropped_full", c.dropped_full),
        ("malformed", c.malformed),
        ("oversized", c.oversized),
    ] {
        f.sample(&[fate], n);
    }
    for (desc, value) in &INGRESS {
        w.single(desc, value(c));
    }
}

fn peer_families(w: &mut TextWriter, n: &PeerNet) {
    let c = n.counters();
    for (desc, value) in &PEER_TRAFFIC {
        w.single(desc, value(&c));
    }
    w.single(&PEER_CONNECTED, n.connected().len());
    // Every reason from zero, so the first refusal shows in `increase()` (and alerts).
    let mut f = w.family(&PEER_REFUSED);
    for reason in dyno_net::RefuseReason::ALL {
        f.sample(&[reason.as_str()], c.refused(reason));
    }
}
