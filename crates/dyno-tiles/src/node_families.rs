//! Every `dyno_node_*` Prometheus family, declared once: the single-process node's
//! (`dyno node --workload`, rendered by [`crate::node_metrics`] from the bench's
//! progress) and the network node's (`dyno node run`, rendered by dyno-node's metrics
//! from its status, its QUIC ingress and its peer links). A dashboard or a scraper
//! finds each name here, and a name cannot be declared twice with two meanings. The
//! two nodes measure some things alike under different names (a block's stage times,
//! its transactions): both sets are what the nodes have exported, and scrapers rely on
//! each.
//!
//! The declarations only name and explain a family; each exporter pairs it with its
//! value.

use dyno_obs::Desc;

/// The stages in the order a block goes through them: the `stage` label of
/// [`BLOCK_STAGE_SECONDS_TOTAL`], [`BLOCK_STAGE_SECONDS_LAST`] and
/// [`FORGE_STAGE_SECONDS_LAST`].
pub const STAGES: [&str; 5] = ["leader_check", "ticking", "snapshot", "forged", "adopted"];

// The single-process node: its load's transactions and its blocks' stages.

/// `dyno_node_tps`, a gauge.
pub const TPS: Desc = Desc::gauge(
    "dyno_node_tps",
    "Transactions landed (executed or failed) over the last second.",
);

/// `dyno_node_latency_seconds`, a gauge by `quantile`.
pub const LATENCY_SECONDS: Desc = Desc::gauge(
    "dyno_node_latency_seconds",
    "Generation-to-PoH latency of the transactions recorded in the last second.",
)
.labels(&["quantile"]);

/// `dyno_node_transactions_total`, a counter.
pub const TRANSACTIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_transactions_total",
    "Transactions recorded into produced blocks.",
);

/// `dyno_node_blocks_total`, a counter.
pub const BLOCKS_TOTAL: Desc = Desc::counter(
    "dyno_node_blocks_total",
    "Blocks (PoH slots) produced and reported.",
);

/// `dyno_node_block_stage_seconds_total`, a counter by `stage`.
pub const BLOCK_STAGE_SECONDS_TOTAL: Desc = Desc::counter(
    "dyno_node_block_stage_seconds_total",
    "Time spent in each stage of block production, summed over blocks.",
)
.labels(&["stage"]);

/// `dyno_node_block_stage_seconds_last`, a gauge by `stage`.
pub const BLOCK_STAGE_SECONDS_LAST: Desc = Desc::gauge(
    "dyno_node_block_stage_seconds_last",
    "Time the last block spent in each stage.",
)
.labels(&["stage"]);

// The network node: its chain and blocks, its client transactions, its QUIC ingress and
// its peer links.

/// `dyno_node_height`, a gauge.
pub const HEIGHT: Desc = Desc::gauge("dyno_node_height", "Height of the chosen tip.");

/// `dyno_node_mempool_transactions`, a gauge.
pub const MEMPOOL_TRANSACTIONS: Desc = Desc::gauge(
    "dyno_node_mempool_transactions",
    "Transactions waiting in the mempool.",
);

/// `dyno_node_blocks_forged_total`, a counter.
pub const BLOCKS_FORGED_TOTAL: Desc =
    Desc::counter("dyno_node_blocks_forged_total", "Blocks this node forged.");

/// `dyno_node_blocks_adopted_total`, a counter.
pub const BLOCKS_ADOPTED_TOTAL: Desc = Desc::counter(
    "dyno_node_blocks_adopted_total",
    "Blocks adopted (forged here or fetched).",
);

/// `dyno_node_fork_switches_total`, a counter.
pub const FORK_SWITCHES_TOTAL: Desc = Desc::counter(
    "dyno_node_fork_switches_total",
    "Times the tip moved to another branch (a fork switch).",
);

/// `dyno_node_blocks_rejected_total`, a counter by `reason`.
pub const BLOCKS_REJECTED_TOTAL: Desc = Desc::counter(
    "dyno_node_blocks_rejected_total",
    "Blocks that failed validation, by reason.",
)
.labels(&["reason"]);

/// `dyno_node_headers_received_total`, a counter.
pub const HEADERS_RECEIVED_TOTAL: Desc = Desc::counter(
    "dyno_node_headers_received_total",
    "Block headers received from peers.",
);

/// `dyno_node_block_fetches_total`, a counter.
pub const BLOCK_FETCHES_TOTAL: Desc = Desc::counter(
    "dyno_node_block_fetches_total",
    "Block bodies asked of peers.",
);

/// `dyno_node_block_fetches_abandoned_total`, a counter.
pub const BLOCK_FETCHES_ABANDONED_TOTAL: Desc = Desc::counter(
    "dyno_node_block_fetches_abandoned_total",
    "Blocks given up on after every request went unanswered.",
);

/// `dyno_node_headers_ignored_total`, a counter.
pub const HEADERS_IGNORED_TOTAL: Desc = Desc::counter(
    "dyno_node_headers_ignored_total",
    "Headers not fetched: slot not begun, leader not scheduled, or too far below the tip.",
);

/// `dyno_node_orphans_dropped_total`, a counter.
pub const ORPHANS_DROPPED_TOTAL: Desc = Desc::counter(
    "dyno_node_orphans_dropped_total",
    "Blocks dropped because the most allowed already waited for their parents.",
);

/// `dyno_node_bad_block_bodies_total`, a counter.
pub const BAD_BLOCK_BODIES_TOTAL: Desc = Desc::counter(
    "dyno_node_bad_block_bodies_total",
    "Block bodies from peers that failed validation or did not decode.",
);

/// `dyno_node_blocks_forged_by_tiles_total`, a counter.
pub const BLOCKS_FORGED_BY_TILES_TOTAL: Desc = Desc::counter(
    "dyno_node_blocks_forged_by_tiles_total",
    "Blocks the leader pipeline's tiles forged (the rest: the sequential bank).",
);

/// `dyno_node_forge_fallbacks_total`, a counter.
pub const FORGE_FALLBACKS_TOTAL: Desc = Desc::counter(
    "dyno_node_forge_fallbacks_total",
    "Slots the tiles could not forge, forged by the sequential bank instead.",
);

/// `dyno_node_forge_unrecorded_transactions_total`, a counter.
pub const FORGE_UNRECORDED_TRANSACTIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_forge_unrecorded_transactions_total",
    "Snapshot transactions the tiles had not recorded when their block was cut.",
);

/// `dyno_node_malformed_blocks_total`, a counter.
pub const MALFORMED_BLOCKS_TOTAL: Desc = Desc::counter(
    "dyno_node_malformed_blocks_total",
    "Block bodies from peers that were not a block at all (refused, not rejected).",
);

/// `dyno_node_block_fetched_bytes_total`, a counter.
pub const BLOCK_FETCHED_BYTES_TOTAL: Desc = Desc::counter(
    "dyno_node_block_fetched_bytes_total",
    "Bytes of block bodies fetched.",
);

/// `dyno_node_transactions_relayed_total`, a counter.
pub const TRANSACTIONS_RELAYED_TOTAL: Desc = Desc::counter(
    "dyno_node_transactions_relayed_total",
    "Transactions relayed to peers.",
);

/// `dyno_node_block_fetches_shed_total`, a counter.
pub const BLOCK_FETCHES_SHED_TOTAL: Desc = Desc::counter(
    "dyno_node_block_fetches_shed_total",
    "Announced blocks not fetched: the most fetches allowed (in all or per announcer) were in flight.",
);

/// `dyno_node_equivocations_total`, a counter.
pub const EQUIVOCATIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_equivocations_total",
    "Equivocations recorded: a second valid block of a slot, logged with both signed headers.",
);

/// `dyno_node_peers_cut_total`, a counter.
pub const PEERS_CUT_TOTAL: Desc = Desc::counter(
    "dyno_node_peers_cut_total",
    "Peer links cut for sending messages that are not the protocol.",
);

/// `dyno_node_bad_messages_total`, a counter.
pub const BAD_MESSAGES_TOTAL: Desc = Desc::counter(
    "dyno_node_bad_messages_total",
    "Peer messages that are not the protocol (do not decode).",
);

/// `dyno_node_client_transactions_total`, a counter by `fate`.
pub const CLIENT_TRANSACTIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_client_transactions_total",
    "Client transactions by fate (received = the sum of the others + in flight).",
)
.labels(&["fate"]);

/// `dyno_node_client_transactions_in_flight`, a gauge.
pub const CLIENT_TRANSACTIONS_IN_FLIGHT: Desc = Desc::gauge(
    "dyno_node_client_transactions_in_flight",
    "Client transactions still in the mempool.",
);

/// `dyno_node_forge_stage_seconds_last`, a gauge by `stage`.
pub const FORGE_STAGE_SECONDS_LAST: Desc = Desc::gauge(
    "dyno_node_forge_stage_seconds_last",
    "The last forged block's time in each stage.",
)
.labels(&["stage"]);

/// `dyno_node_validate_seconds_last`, a gauge.
pub const VALIDATE_SECONDS_LAST: Desc = Desc::gauge(
    "dyno_node_validate_seconds_last",
    "The last fetched block's validation and replay time.",
);

/// `dyno_node_ingress_transactions_total`, a counter by `fate`.
pub const INGRESS_TRANSACTIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_transactions_total",
    "Transactions at the QUIC ingress by fate (accepted ones are handed to the mempool).",
)
.labels(&["fate"]);

/// `dyno_node_ingress_refused_total`, a counter by `reason`.
pub const INGRESS_REFUSED_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_refused_total",
    "Client transactions refused before any signature check (graceful overload), by \
     reason: the mempool and what is on its way to it were full, or too many were queued.",
)
.labels(&["reason"]);

/// `dyno_node_ingress_bytes_total`, a counter.
pub const INGRESS_BYTES_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_bytes_total",
    "Transaction bytes received at the QUIC ingress.",
);

/// `dyno_node_ingress_connections_total`, a counter.
pub const INGRESS_CONNECTIONS_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_connections_total",
    "QUIC clients that completed their hello.",
);

/// `dyno_node_ingress_unknown_clients_total`, a counter.
pub const INGRESS_UNKNOWN_CLIENTS_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_unknown_clients_total",
    "QUIC clients refused (wrong ALPN or genesis).",
);

/// `dyno_node_ingress_connections_refused_total`, a counter.
pub const INGRESS_CONNECTIONS_REFUSED_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_connections_refused_total",
    "QUIC client connections refused because the most allowed were being served.",
);

/// `dyno_node_ingress_paused_total`, a counter.
pub const INGRESS_PAUSED_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_paused_total",
    "Times a QUIC client's stream was paused, not read, while the node had no room.",
);

/// `dyno_node_ingress_throttled_total`, a counter.
pub const INGRESS_THROTTLED_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_throttled_total",
    "Times a QUIC client's stream waited because its connection was above ingress_tps_per_connection.",
);

/// `dyno_node_ingress_over_rate_total`, a counter.
pub const INGRESS_OVER_RATE_TOTAL: Desc = Desc::counter(
    "dyno_node_ingress_over_rate_total",
    "QUIC datagrams refused, never offered to the node, because their connection was above ingress_tps_per_connection.",
);

/// `dyno_node_peer_frames_out_total`, a counter.
pub const PEER_FRAMES_OUT_TOTAL: Desc =
    Desc::counter("dyno_node_peer_frames_out_total", "Frames sent to peers.");

/// `dyno_node_peer_bytes_out_total`, a counter.
pub const PEER_BYTES_OUT_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_bytes_out_total",
    "Payload bytes sent to peers.",
);

/// `dyno_node_peer_frames_in_total`, a counter.
pub const PEER_FRAMES_IN_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_frames_in_total",
    "Frames received from peers.",
);

/// `dyno_node_peer_bytes_in_total`, a counter.
pub const PEER_BYTES_IN_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_bytes_in_total",
    "Payload bytes received from peers.",
);

/// `dyno_node_peer_fault_dropped_total`, a counter.
pub const PEER_FAULT_DROPPED_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_fault_dropped_total",
    "Frames to peers a link fault lost or a cut link swallowed (the control file).",
);

/// `dyno_node_peer_slow_cut_total`, a counter.
pub const PEER_SLOW_CUT_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_slow_cut_total",
    "Peer links cut because the peer did not read what was queued to it.",
);

/// `dyno_node_peer_inbound_paused_total`, a counter.
pub const PEER_INBOUND_PAUSED_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_inbound_paused_total",
    "Times a link's reader paused: its peer had the most bytes allowed read and not yet handled.",
);

/// `dyno_node_peer_connected`, a gauge.
pub const PEER_CONNECTED: Desc = Desc::gauge("dyno_node_peer_connected", "Peers linked now.");

/// `dyno_node_peer_refused_total`, a counter by `reason`.
pub const PEER_REFUSED_TOTAL: Desc = Desc::counter(
    "dyno_node_peer_refused_total",
    "Peer connections refused or cut, by reason.",
)
.labels(&["reason"]);
