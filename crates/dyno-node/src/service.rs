//! A node with its real network: `dyno-net` peer links, the metrics and readiness
//! endpoint, and the node loop on its own thread. [`RunningNode::start`] binds every
//! listener before anything runs (an address that cannot be bound is an error naming
//! it); [`RunningNode::stop`] stops and joins everything, the log flushed.
//!
//! Threads: the node loop (blocks on its inbox), one forwarder from the peer network's
//! events to the inbox (blocks on them), the metrics server (blocks on accept), and the
//! peer network's own (see `dyno-net`). None polls.

use crate::verify::VerifyPool;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dyno_net::{
    Ingress, IngressConfig, IngressCounters, LinkShape, PeerConfig, PeerEvent, PeerNet, PeerSpec,
};

use crate::config::NodeConfig;
use crate::error::{Error, Result};
use crate::genesis::Genesis;
use crate::log::EventLog;
use crate::node::{Node, NodeOptions, Status};
use crate::transport::{Input, Transport};

/// Largest peer frame: a block of `max_block_txs` transfers fits with room to spare.
pub fn max_frame(max_block_txs: usize) -> usize {
    (max_block_txs * (dyno_txn::tx::MAX_TX_LEN + 2) + (1 << 16)).max(1 << 20)
}

struct NetTransport(Arc<PeerNet>);

impl Transport for NetTransport {
    fn send(&self, peer: &str, payload: Vec<u8>) -> bool {
        self.0.send(peer, payload)
    }
}

/// A running node.
pub struct RunningNode {
    inbox: Sender<Input>,
    node: Option<JoinHandle<Status>>,
    forwarder: Option<JoinHandle<()>>,
    net: Option<Arc<PeerNet>>,
    ingress: Option<Arc<Ingress>>,
    http: Option<(Arc<tiny_http::Server>, JoinHandle<()>)>,
    /// The control file's watcher and its stop flag.
    control: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    status: Arc<Mutex<Option<Status>>>,
    /// The peer listener's address (port 0 resolved).
    pub peer_addr: SocketAddr,
    /// The metrics listener's address, if any.
    pub metrics_addr: Option<SocketAddr>,
    /// The QUIC ingress address, if any.
    pub ingress_addr: Option<SocketAddr>,
}

/// Client transactions the ingress may queue for the node loop before it answers
/// "full" (counted `dropped_full` by the ingress): bounds memory under a flat-out load.
pub const INGRESS_QUEUE: usize = 1 << 16;

fn shape_of(latency_ms: f64, bandwidth_mbit: Option<f64>) -> LinkShape {
    LinkShape {
        latency: Duration::from_secs_f64(latency_ms / 1e3),
        bandwidth_bps: bandwidth_mbit.map(|m| (m * 1e6) as u64),
    }
}

impl RunningNode {
    /// Binds the metrics listener (answering 503 on `/ready` until the rest is up), the
    /// QUIC ingress, then the peer listener (only then are peers dialed), then starts
    /// the node loop; `/ready` answers 200 after that. `cfg` must have passed
    /// [`crate::config::LoadedConfig::check`] against `genesis`.
    pub fn start(cfg: &NodeConfig, genesis: Arc<Genesis>) -> Result<RunningNode> {
        // The network's limit, lowered by the node's own if it sets one.
        let block_limit = cfg
            .max_block_txs
            .map_or(genesis.file.max_block_txs as usize, |m| {
                m.min(genesis.file.max_block_txs as usize)
            });
        let ready = Arc::new(AtomicBool::new(false));
        let status: Arc<Mutex<Option<Status>>> = Arc::new(Mutex::new(None));
        let net_slot: Arc<Mutex<Option<Arc<PeerNet>>>> = Arc::new(Mutex::new(None));
        let ingress_slot: Arc<Mutex<Option<Arc<Ingress>>>> = Arc::new(Mutex::new(None));
        let http = match cfg.metrics_listen {
            None => None,
            Some(addr) => {
                let server = Arc::new(tiny_http::Server::http(addr).map_err(|e| Error::Bind {
                    what: "metrics",
                    addr: addr.to_string(),
                    reason: e.to_string(),
                })?);
                let (srv, ready, status, net, ing) = (
                    server.clone(),
                    ready.clone(),
                    status.clone(),
                    net_slot.clone(),
                    ingress_slot.clone(),
                );
                let h = std::thread::Builder::new()
                    .name("node-metrics".into())
                    .spawn(move || serve(&srv, &ready, &status, &net, &ing))
                    .map_err(|e| Error::Net(format!("metrics thread: {e}")))?;
                Some((server, h))
            }
        };
        let metrics_addr = http.as_ref().and_then(|(s, _)| s.server_addr().to_ip());
        let log = Arc::new(EventLog::open(&cfg.id, cfg.node_log.as_deref())?);
        // Every listener is bound before any peer is dialed: a peer that links at once
        // (and relays or asks for blocks) finds this node whole, and /ready's "listeners
        // bound" is true of the QUIC socket too.
        let (inbox, rx) = channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let verify_tiles = cfg
            .verify_tiles
            .unwrap_or_else(crate::verify::default_verify_tiles);
        let verify_batch = cfg
            .verify_batch
            .unwrap_or(crate::verify::DEFAULT_VERIFY_BATCH);
        let ingress = match cfg.ingress_listen {
            None => None,
            Some(listen) => {
                // Signatures are checked on the verify tiles, not on the ingress thread
                // (one thread's Ed25519 rate capped the node there): the sink only
                // counts and queues.
                let out = inbox.clone();
                let pool =
                    VerifyPool::start(verify_tiles, verify_batch, move |bytes, signature_ok| {
                        out.send(Input::CheckedTx {
                            bytes,
                            signature_ok,
                        })
                        .is_ok()
                    })
                    .map_err(|e| Error::Net(format!("verify threads: {e}")))?;
                let queued = queued.clone();
                let sink = move |tx: &[u8]| {
                    if queued.load(Ordering::Relaxed) >= INGRESS_QUEUE {
                        return false;
                    }
                    queued.fetch_add(1, Ordering::Relaxed);
                    pool.submit(tx.to_vec())
                };
                let cfg = IngressConfig {
                    listen,
                    genesis_hash: genesis.hash,
                    max_frame: dyno_txn::tx::MAX_TX_LEN,
                };
                Some(Arc::new(Ingress::start(cfg, sink).map_err(
                    |e| match e {
                        dyno_net::NetError::Bind { what, addr, source } => Error::Bind {
                            what,
                            addr: addr.to_string(),
                            reason: source.to_string(),
                        },
                        other => Error::Net(other.to_string()),
                    },
                )?))
            }
        };
        let peers: Vec<PeerSpec> = cfg
            .peers
            .iter()
            .map(|p| PeerSpec {
                id: p.id.clone(),
                addr: p.addr.clone(),
                shape: shape_of(p.latency_ms, p.bandwidth_mbit),
            })
            .collect();
        let (net, events) = PeerNet::start(
            PeerConfig {
                node_id: cfg.id.clone(),
                genesis_hash: genesis.hash,
                listen: cfg.peer_listen,
                max_frame: max_frame(genesis.file.max_block_txs as usize),
            },
            peers,
        )
        .map_err(|e| match e {
            dyno_net::NetError::Bind { what, addr, source } => Error::Bind {
                what,
                addr: addr.to_string(),
                reason: source.to_string(),
            },
            other => Error::Net(other.to_string()),
        })?;
        let net = Arc::new(net);
        *net_slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(net.clone());
        let peer_addr = net.local_addr();
        let fwd = inbox.clone();
        let forwarder = std::thread::Builder::new()
            .name("node-peer-events".into())
            .spawn(move || {
                for ev in events {
                    let input = match ev {
                        PeerEvent::Connected { peer } => Input::Connected(peer),
                        PeerEvent::Message {
                            peer,
                            payload,
                            received_ns,
                        } => Input::Peer {
                            peer,
                            payload,
                            received_ns,
                        },
                        PeerEvent::Disconnected { peer, reason } => {
                            Input::Disconnected { peer, reason }
                        }
                        PeerEvent::Refused { remote, reason } => Input::Refused {
                            remote: remote.to_string(),
                            reason: reason.as_str().to_string(),
                        },
                    };
                    if fwd.send(input).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| Error::Net(format!("forwarder thread: {e}")))?;
        let ingress_addr = ingress.as_ref().map(|i| i.local_addr());
        *ingress_slot.lock().unwrap_or_else(|p| p.into_inner()) = ingress.clone();
        let mut opts = NodeOptions::new(&cfg.id, cfg.peers.iter().map(|p| p.id.clone()).collect());
        opts.max_block_txs = block_limit;
        opts.mempool_capacity = cfg.mempool_capacity;
        opts.lead_until = cfg.lead_until_slot;
        opts.forge = cfg.forge;
        let control = match &cfg.control {
            None => None,
            Some(path) => {
                let stop = Arc::new(AtomicBool::new(false));
                let watch = crate::control::ControlWatch::new(path.clone());
                let (peers, net, skew, log, s) = (
                    opts.peers.clone(),
                    net.clone(),
                    opts.clock_skew_ns.clone(),
                    log.clone(),
                    stop.clone(),
                );
                let h = std::thread::Builder::new()
                    .name("node-control".into())
                    .spawn(move || crate::control::watch(watch, peers, net, skew, log, s))
                    .map_err(|e| Error::Net(format!("control thread: {e}")))?;
                Some((stop, h))
            }
        };
        opts.verify_tiles = verify_tiles;
        opts.verify_batch = verify_batch;
        opts.forge_at = cfg.forge_at;
        let node = Node::new(
            opts,
            genesis,
            log,
            Box::new(NetTransport(net.clone())),
            status.clone(),
        )
        .with_ingress_queue(queued);
        // Stopped by an Input::Stop (see `shutdown`), never by the flag.
        let s = AtomicBool::new(false);
        let handle = std::thread::Builder::new()
            .name("node".into())
            .spawn(move || node.run(rx, &s))
            .map_err(|e| Error::Net(format!("node thread: {e}")))?;
        ready.store(true, Ordering::SeqCst);
        Ok(RunningNode {
            inbox,
            node: Some(handle),
            forwarder: Some(forwarder),
            net: Some(net),
            ingress,
            http,
            control,
            status,
            peer_addr,
            metrics_addr,
            ingress_addr,
        })
    }

    /// A sender into the node loop (ingress hands transactions to it).
    pub fn inbox(&self) -> Sender<Input> {
        self.inbox.clone()
    }

    /// The node's latest status.
    pub fn status(&self) -> Option<Status> {
        self.status
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The QUIC ingress's counters (none without ingress).
    pub fn ingress_counters(&self) -> Option<IngressCounters> {
        self.ingress.as_ref().map(|i| i.counters())
    }

    /// Stops the node, joins every thread; returns its final status.
    pub fn stop(mut self) -> Status {
        self.shutdown().expect("the node thread ran")
    }

    fn shutdown(&mut self) -> Option<Status> {
        if let Some((srv, h)) = self.http.take() {
            srv.unblock();
            let _ = h.join();
        }
        // Ingress before the loop: nothing new arrives while the loop takes in what is
        // queued. The metrics thread held the only other reference.
        if let Some(i) = self.ingress.take().and_then(|i| Arc::try_unwrap(i).ok()) {
            i.shutdown();
        }
        // A Stop message, not the flag: it queues behind every transaction already
        // handed over, so each of them gets its fate before the loop ends.
        let _ = self.inbox.send(Input::Stop);
        let status = self.node.take().and_then(|h| h.join().ok());
        if let Some((stop, h)) = self.control.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
        if let Some(net) = self.net.take() {
            // The node loop (and its transport) is gone and the metrics thread joined:
            // this is the last reference.
            if let Ok(net) = Arc::try_unwrap(net) {
                net.shutdown();
            }
        }
        if let Some(f) = self.forwarder.take() {
            let _ = f.join();
        }
        status
    }
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(
    srv: &tiny_http::Server,
    ready: &AtomicBool,
    status: &Mutex<Option<Status>>,
    net: &Mutex<Option<Arc<PeerNet>>>,
    ingress: &Mutex<Option<Arc<Ingress>>>,
) {
    for req in srv.incoming_requests() {
        let (code, body) = match req.url() {
            "/ready" if ready.load(Ordering::SeqCst) => (200, "ready\n".to_string()),
            "/ready" => (503, "starting\n".to_string()),
            "/metrics" => {
                let s = status.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let n = net.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let i = ingress.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let ic = i.as_ref().map(|i| i.counters());
                let mut body = build_info();
                body.push_str(&metrics_text(s.as_ref(), n.as_deref(), ic.as_ref()));
                (200, body)
            }
            _ => (404, "not found: try /metrics or /ready\n".to_string()),
        };
        let _ = req.respond(tiny_http::Response::from_string(body).with_status_code(code));
    }
}

/// The `dyno_build_info` gauge: which build serves these metrics.
fn build_info() -> String {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    dyno_tango::build_info_text(&[("version", env!("CARGO_PKG_VERSION")), ("profile", profile)])
}

/// The Prometheus text of a node's status and its peer network's counters.
pub fn metrics_text(
    s: Option<&Status>,
    net: Option<&PeerNet>,
    ingress: Option<&IngressCounters>,
) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let one = |v: f64| vec![(String::new(), v)];
    if let Some(s) = s {
        let c = &s.counters;
        family(
            "dyno_node_height",
            "gauge",
            "Height of the chosen tip.",
            &one(s.height as f64),
        );
        family(
            "dyno_node_mempool_transactions",
            "gauge",
            "Transactions waiting in the mempool.",
            &one(s.mempool as f64),
        );
        family(
            "dyno_node_blocks_forged_total",
            "counter",
            "Blocks this node forged.",
            &one(c.forged as f64),
        );
        family(
            "dyno_node_blocks_adopted_total",
            "counter",
            "Blocks adopted (forged here or fetched).",
            &one(c.adopted as f64),
        );
        let rejected: Vec<_> = crate::chain::Reject::ALL
            .iter()
            .map(|r| {
                let n = c.rejected.get(r.name()).copied().unwrap_or(0);
                (format!("{{reason=\"{}\"}}", r.name()), n as f64)
            })
            .collect();
        family(
            "dyno_node_blocks_rejected_total",
            "counter",
            "Blocks that failed validation, by reason.",
            &rejected,
        );
        family(
            "dyno_node_headers_received_total",
            "counter",
            "Block headers received from peers.",
            &one(c.headers_received as f64),
        );
        family(
            "dyno_node_block_fetches_total",
            "counter",
            "Block bodies asked of peers.",
            &one(c.fetches as f64),
        );
        family(
            "dyno_node_block_fetches_abandoned_total",
            "counter",
            "Blocks given up on after every request went unanswered.",
            &one(c.fetches_abandoned as f64),
        );
        family(
            "dyno_node_headers_ignored_total",
            "counter",
            "Headers not fetched: slot not begun, leader not scheduled, or too far below the tip.",
            &one(c.headers_ignored as f64),
        );
        family(
            "dyno_node_orphans_dropped_total",
            "counter",
            "Blocks dropped because the most allowed already waited for their parents.",
            &one(c.orphans_dropped as f64),
        );
        family(
            "dyno_node_bad_block_bodies_total",
            "counter",
            "Block bodies from peers that failed validation or did not decode.",
            &one(c.bad_bodies.values().sum::<u64>() as f64),
        );
        family(
            "dyno_node_blocks_forged_by_tiles_total",
            "counter",
            "Blocks the leader pipeline's tiles forged (the rest: the sequential bank).",
            &one(c.forged_by_tiles as f64),
        );
        family(
            "dyno_node_forge_fallbacks_total",
            "counter",
            "Slots the tiles could not forge, forged by the sequential bank instead.",
            &one(c.forge_fallbacks as f64),
        );
        family(
            "dyno_node_forge_unrecorded_transactions_total",
            "counter",
            "Snapshot transactions the tiles had not recorded when their block was cut.",
            &one(c.forge_unrecorded as f64),
        );
        family(
            "dyno_node_malformed_blocks_total",
            "counter",
            "Block bodies from peers that were not a block at all (refused, not rejected).",
            &one(c.malformed_blocks as f64),
        );
        family(
            "dyno_node_block_fetched_bytes_total",
            "counter",
            "Bytes of block bodies fetched.",
            &one(c.fetched_bytes as f64),
        );
        family(
            "dyno_node_transactions_relayed_total",
            "counter",
            "Transactions relayed to peers.",
            &one(c.relayed as f64),
        );
        let f = &s.fates;
        let fates = [
            ("received", f.received),
            ("malformed", f.malformed),
            ("invalid_signature", f.invalid_signature),
            ("duplicate", f.duplicate),
            ("dropped_full", f.dropped_full),
            ("executed", f.executed),
            ("failed", f.failed),
        ];
        let fates: Vec<_> = fates
            .iter()
            .map(|(k, v)| (format!("{{fate=\"{k}\"}}"), *v as f64))
            .collect();
        family(
            "dyno_node_client_transactions_total",
            "counter",
            "Client transactions by fate (received = the sum of the others + in flight).",
            &fates,
        );
        family(
            "dyno_node_client_transactions_in_flight",
            "gauge",
            "Client transactions still in the mempool.",
            &one(f.in_flight as f64),
        );
        const STAGES: [&str; 5] = ["leader_check", "ticking", "snapshot", "forged", "adopted"];
        let stages: Vec<_> = STAGES
            .iter()
            .zip(c.last_forge_stages_s)
            .map(|(k, v)| (format!("{{stage=\"{k}\"}}"), v))
            .collect();
        family(
            "dyno_node_forge_stage_seconds_last",
            "gauge",
            "The last forged block's time in each stage.",
            &stages,
        );
        family(
            "dyno_node_validate_seconds_last",
            "gauge",
            "The last fetched block's validation and replay time.",
            &one(c.last_validate_s),
        );
    }
    if let Some(c) = ingress {
        let fates = [
            ("accepted", c.accepted),
            ("dropped_full", c.dropped_full),
            ("malformed", c.malformed),
            ("oversized", c.oversized),
        ];
        let fates: Vec<_> = fates
            .iter()
            .map(|(k, v)| (format!("{{fate=\"{k}\"}}"), *v as f64))
            .collect();
        family(
            "dyno_node_ingress_transactions_total",
            "counter",
            "Transactions at the QUIC ingress by fate (accepted ones are handed to the mempool).",
            &fates,
        );
        family(
            "dyno_node_ingress_bytes_total",
            "counter",
            "Transaction bytes received at the QUIC ingress.",
            &one(c.bytes as f64),
        );
        family(
            "dyno_node_ingress_connections_total",
            "counter",
            "QUIC clients that completed their hello.",
            &one(c.connections as f64),
        );
        family(
            "dyno_node_ingress_unknown_clients_total",
            "counter",
            "QUIC clients refused (wrong ALPN or genesis).",
            &one(c.unknown_clients as f64),
        );
    }
    if let Some(n) = net {
        let c = n.counters();
        family(
            "dyno_node_peer_frames_out_total",
            "counter",
            "Frames sent to peers.",
            &one(c.frames_out as f64),
        );
        family(
            "dyno_node_peer_bytes_out_total",
            "counter",
            "Payload bytes sent to peers.",
            &one(c.bytes_out as f64),
        );
        family(
            "dyno_node_peer_frames_in_total",
            "counter",
            "Frames received from peers.",
            &one(c.frames_in as f64),
        );
        family(
            "dyno_node_peer_bytes_in_total",
            "counter",
            "Payload bytes received from peers.",
            &one(c.bytes_in as f64),
        );
        family(
            "dyno_node_peer_fault_dropped_total",
            "counter",
            "Frames to peers a link fault lost or a cut link swallowed (the control file).",
            &one(c.fault_dropped as f64),
        );
        family(
            "dyno_node_peer_connected",
            "gauge",
            "Peers linked now.",
            &one(n.connected().len() as f64),
        );
        let refused: Vec<_> = c
            .refused
            .iter()
            .map(|(r, v)| (format!("{{reason=\"{}\"}}", r.as_str()), *v as f64))
            .collect();
        family(
            "dyno_node_peer_refused_total",
            "counter",
            "Peer connections refused or cut, by reason.",
            &refused,
        );
    }
    out
}
