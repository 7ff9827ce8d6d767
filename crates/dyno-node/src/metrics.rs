//! The node's metrics: its status (chain, blocks, client transactions, forge stages), its
//! QUIC ingress and its peer network, as the Prometheus families declared in
//! [`dyno_tiles::node_families`] (every `dyno_node_*` family, once), each paired here
//! with its value and written by dyno-obs' one writer (which escapes label values). The
//! endpoint that serves them is [`crate::service`]'s.

use dyno_net::{IngressCounters, PeerNet};
use dyno_obs::{Desc, TextWriter};
use dyno_tiles::node_families::{
    self, BLOCKS_REJECTED_TOTAL, CLIENT_TRANSACTIONS_IN_FLIGHT, CLIENT_TRANSACTIONS_TOTAL,
    FORGE_STAGE_SECONDS_LAST, INGRESS_REFUSED_TOTAL, INGRESS_TRANSACTIONS_TOTAL, PEER_CONNECTED,
    PEER_REFUSED_TOTAL, STAGES, VALIDATE_SECONDS_LAST,
};

use crate::node::Status;

type StatusFamily = (Desc, fn(&Status) -> u64);

/// The families before the rejections, one sample each.
const CHAIN: [StatusFamily; 5] = [
    (node_families::HEIGHT, |s| s.height),
    (node_families::MEMPOOL_TRANSACTIONS, |s| s.mempool as u64),
    (node_families::BLOCKS_FORGED_TOTAL, |s| s.counters.forged),
    (node_families::BLOCKS_ADOPTED_TOTAL, |s| s.counters.adopted),
    (node_families::FORK_SWITCHES_TOTAL, |s| {
        s.counters.fork_switches
    }),
];

/// The families between the rejections and the client transactions, one sample each.
const BLOCK_FLOW: [StatusFamily; 16] = [
    (node_families::HEADERS_RECEIVED_TOTAL, |s| {
        s.counters.headers_received
    }),
    (node_families::BLOCK_FETCHES_TOTAL, |s| s.counters.fetches),
    (node_families::BLOCK_FETCHES_ABANDONED_TOTAL, |s| {
        s.counters.fetches_abandoned
    }),
    (node_families::HEADERS_IGNORED_TOTAL, |s| {
        s.counters.headers_ignored
    }),
    (node_families::ORPHANS_DROPPED_TOTAL, |s| {
        s.counters.orphans_dropped
    }),
    (node_families::BAD_BLOCK_BODIES_TOTAL, |s| {
        s.counters.bad_bodies.values().sum()
    }),
    (node_families::BLOCKS_FORGED_BY_TILES_TOTAL, |s| {
        s.counters.forged_by_tiles
    }),
    (node_families::FORGE_FALLBACKS_TOTAL, |s| {
        s.counters.forge_fallbacks
    }),
    (node_families::FORGE_UNRECORDED_TRANSACTIONS_TOTAL, |s| {
        s.counters.forge_unrecorded
    }),
    (node_families::MALFORMED_BLOCKS_TOTAL, |s| {
        s.counters.malformed_blocks
    }),
    (node_families::BLOCK_FETCHED_BYTES_TOTAL, |s| {
        s.counters.fetched_bytes
    }),
    (node_families::TRANSACTIONS_RELAYED_TOTAL, |s| {
        s.counters.relayed
    }),
    (node_families::BLOCK_FETCHES_SHED_TOTAL, |s| {
        s.counters.fetches_shed
    }),
    (node_families::EQUIVOCATIONS_TOTAL, |s| {
        s.counters.equivocations
    }),
    (node_families::PEERS_CUT_TOTAL, |s| {
        s.counters.peers_cut.values().sum()
    }),
    (node_families::BAD_MESSAGES_TOTAL, |s| {
        s.counters.bad_messages
    }),
];

type IngressFamily = (Desc, fn(&IngressCounters) -> u64);

const INGRESS: [IngressFamily; 7] = [
    (node_families::INGRESS_BYTES_TOTAL, |c| c.bytes),
    (node_families::INGRESS_CONNECTIONS_TOTAL, |c| c.connections),
    (node_families::INGRESS_UNKNOWN_CLIENTS_TOTAL, |c| {
        c.unknown_clients
    }),
    (node_families::INGRESS_CONNECTIONS_REFUSED_TOTAL, |c| {
        c.connections_refused
    }),
    (node_families::INGRESS_PAUSED_TOTAL, |c| c.paused),
    (node_families::INGRESS_THROTTLED_TOTAL, |c| c.throttled),
    (node_families::INGRESS_OVER_RATE_TOTAL, |c| c.over_rate),
];

type PeerFamily = (Desc, fn(&dyno_net::PeerCounters) -> u64);

const PEER_TRAFFIC: [PeerFamily; 7] = [
    (node_families::PEER_FRAMES_OUT_TOTAL, |c| c.frames_out),
    (node_families::PEER_BYTES_OUT_TOTAL, |c| c.bytes_out),
    (node_families::PEER_FRAMES_IN_TOTAL, |c| c.frames_in),
    (node_families::PEER_BYTES_IN_TOTAL, |c| c.bytes_in),
    (node_families::PEER_FAULT_DROPPED_TOTAL, |c| c.fault_dropped),
    (node_families::PEER_SLOW_CUT_TOTAL, |c| c.slow_peers),
    (node_families::PEER_INBOUND_PAUSED_TOTAL, |c| {
        c.inbound_paused
    }),
];

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
    let mut f = w.family(&BLOCKS_REJECTED_TOTAL);
    for r in crate::chain::Reject::ALL {
        f.sample(&[r.name()], c.rejected.get(r.name()).copied().unwrap_or(0));
    }
    for (desc, value) in &BLOCK_FLOW {
        w.single(desc, value(s));
    }
    let t = &s.fates;
    let mut f = w.family(&CLIENT_TRANSACTIONS_TOTAL);
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
    w.single(&CLIENT_TRANSACTIONS_IN_FLIGHT, t.in_flight);
    let mut f = w.family(&FORGE_STAGE_SECONDS_LAST);
    for (stage, secs) in STAGES.into_iter().zip(c.last_forge_stages_s) {
        f.sample(&[stage], secs);
    }
    w.single(&VALIDATE_SECONDS_LAST, c.last_validate_s);
    if !c.ingress_refused.is_empty() {
        let mut f = w.family(&INGRESS_REFUSED_TOTAL);
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
    let mut f = w.family(&INGRESS_TRANSACTIONS_TOTAL);
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
    let mut f = w.family(&PEER_REFUSED_TOTAL);
    for reason in dyno_net::RefuseReason::ALL {
        f.sample(&[reason.as_str()], c.refused(reason));
    }
}
