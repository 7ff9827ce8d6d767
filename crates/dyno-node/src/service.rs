//! A node with its real network: `dyno-net` peer links, the metrics and readiness
//! endpoint, and the node loop on its own thread. [`RunningNode::start`] binds every
//! listener before anything runs (an address that cannot be bound is an error naming
//! it); [`RunningNode::stop`] stops and joins everything, the log flushed.
//!
//! Threads: the node loop (blocks on its inbox), one forwarder from the peer network's
//! events to the inbox (blocks on them), the metrics server (blocks on accept), and the
//! peer network's own (see `dyno-net`). None polls.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dyno_net::{
    Ingress, IngressConfig, IngressCounters, LinkShape, NetError, PeerConfig, PeerEvent, PeerNet,
    PeerSpec,
};
use dyno_obs::endpoint::{MetricsEndpoint, Reply};

use crate::admission::Admission;
use crate::config::NodeConfig;
use crate::error::{Error, Result};
use crate::genesis::Genesis;
use crate::log::EventLog;
use crate::metrics::metrics_text;
use crate::node::{Node, NodeOptions, Status};
use crate::relay_check::RelayCheck;
use crate::transport::{Input, Message, Transport};
use crate::verify::{VerifyPool, VerifyTally};

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
    /// The ingress's verify threads' counts.
    verified: Option<VerifyTally>,
    http: Option<MetricsEndpoint>,
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
pub const INGRESS_QUEUE: usize = crate::admission::MAX_ON_THE_WAY;

fn shape_of(latency_ms: f64, bandwidth_mbit: Option<f64>) -> LinkShape {
    LinkShape {
        latency: Duration::from_secs_f64(latency_ms / 1e3),
        bandwidth_bps: bandwidth_mbit.map(|m| (m * 1e6) as u64),
    }
}

/// What the metrics endpoint shows, filled in as the node starts: `/ready` answers 503
/// until every listener is bound and the loop runs.
#[derive(Clone, Default)]
struct Shown {
    ready: Arc<AtomicBool>,
    status: Arc<Mutex<Option<Status>>>,
    net: Arc<Mutex<Option<Arc<PeerNet>>>>,
    ingress: Arc<Mutex<Option<Arc<Ingress>>>>,
}

fn locked<T: Clone>(m: &Mutex<T>) -> T {
    m.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

impl Shown {
    fn route(&self, path: &str) -> Reply {
        match path {
            "/ready" if self.ready.load(Ordering::SeqCst) => Reply::text(200, "ready\n"),
            "/ready" => Reply::text(503, "starting\n"),
            "/metrics" => {
                let ingress = locked(&self.ingress).map(|i| i.counters());
                let mut body = build_info();
                body.push_str(&metrics_text(
                    locked(&self.status).as_ref(),
                    locked(&self.net).as_deref(),
                    ingress.as_ref(),
                ));
                Reply::metrics(body)
            }
            _ => Reply::text(404, "not found: try /metrics or /ready\n"),
        }
    }
}

/// A bind failure names the listener; anything else is the network's.
fn net_error(e: NetError) -> Error {
    match e {
        NetError::Bind { what, addr, source } => Error::Bind {
            what,
            addr: addr.to_string(),
            reason: source.to_string(),
        },
        other => Error::Net(other.to_string()),
    }
}

fn start_endpoint(addr: Option<SocketAddr>, shown: &Shown) -> Result<Option<MetricsEndpoint>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let shown = shown.clone();
    MetricsEndpoint::start(addr, "node-metrics", move |path| shown.route(path))
        .map(Some)
        .map_err(|e| match e {
            dyno_obs::Error::Bind { reason, .. } => Error::Bind {
                what: "metrics",
                addr: addr.to_string(),
                reason,
            },
            other => Error::Net(other.to_string()),
        })
}

/// The QUIC ingress, whose transactions pass the admission gate, then go through the
/// verify tiles into `inbox`; with the verify threads' counts.
fn start_ingress(
    cfg: &NodeConfig,
    genesis: &Genesis,
    inbox: &Sender<Input>,
    admission: &Arc<Admission>,
    (verify_tiles, verify_batch): (usize, usize),
) -> Result<Option<(Arc<Ingress>, VerifyTally)>> {
    let Some(listen) = cfg.ingress_listen else {
        return Ok(None);
    };
    // Signatures are checked on the verify tiles, not on the ingress thread (one
    // thread's Ed25519 rate capped the node there): the sink only counts and queues.
    let out = inbox.clone();
    let pool = VerifyPool::start(verify_tiles, verify_batch, move |bytes, signature_ok| {
        out.send(Input::CheckedTx {
            bytes,
            signature_ok,
        })
        .is_ok()
    })
    .map_err(|e| Error::Net(format!("verify threads: {e}")))?;
    let tally = pool.tally();
    let admission = admission.clone();
    // Refused before the verify threads when the mempool could not keep it (graceful
    // overload, see `crate::admission`): a refusal costs a counter read.
    let sink = move |tx: &[u8]| admission.admit().is_ok() && pool.submit(tx.to_vec());
    let cfg = IngressConfig {
        listen,
        genesis_hash: genesis.hash,
        max_frame: dyno_txn::tx::MAX_TX_LEN,
    };
    let ingress = Ingress::start(cfg, sink).map_err(net_error)?;
    Ok(Some((Arc::new(ingress), tally)))
}

fn start_peers(cfg: &NodeConfig, genesis: &Genesis) -> Result<(PeerNet, Receiver<PeerEvent>)> {
    let peers: Vec<PeerSpec> = cfg
        .peers
        .iter()
        .map(|p| PeerSpec {
            id: p.id.clone(),
            addr: p.addr.clone(),
            shape: shape_of(p.latency_ms, p.bandwidth_mbit),
        })
        .collect();
    let config = PeerConfig {
        node_id: cfg.id.clone(),
        genesis_hash: genesis.hash,
        listen: cfg.peer_listen,
        max_frame: max_frame(genesis.file.max_block_txs as usize),
    };
    PeerNet::start(config, peers).map_err(net_error)
}

/// The thread that hands the peer network's events to the node loop, relay frames
/// through `check` (their signatures checked off the loop, see [`crate::relay_check`]).
fn spawn_forwarder(
    events: Receiver<PeerEvent>,
    inbox: Sender<Input>,
    mut check: RelayCheck,
) -> Result<JoinHandle<()>> {
    let forward = move || {
        for ev in events {
            let input = match ev {
                PeerEvent::Connected { peer } => Input::Connected(peer),
                PeerEvent::Message {
                    peer,
                    payload,
                    received_ns,
                } => match Message::decode_txs(&payload) {
                    Some(txs) => {
                        if !check.submit(peer, txs) {
                            break;
                        }
                        continue;
                    }
                    None => Input::Peer {
                        peer,
                        payload,
                        received_ns,
                    },
                },
                PeerEvent::Disconnected { peer, reason } => Input::Disconnected { peer, reason },
                PeerEvent::Refused { remote, reason } => Input::Refused {
                    remote: remote.to_string(),
                    reason: reason.as_str().to_string(),
                },
            };
            if inbox.send(input).is_err() {
                break;
            }
        }
        check.finish();
    };
    std::thread::Builder::new()
        .name("node-peer-events".into())
        .spawn(forward)
        .map_err(|e| Error::Net(format!("forwarder thread: {e}")))
}

type ControlThread = (Arc<AtomicBool>, JoinHandle<()>);

/// The control file's watcher (link faults, clock skew), if the config names one.
fn start_control(
    cfg: &NodeConfig,
    opts: &NodeOptions,
    net: &Arc<PeerNet>,
    log: &Arc<EventLog>,
) -> Result<Option<ControlThread>> {
    let Some(path) = &cfg.control else {
        return Ok(None);
    };
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
    Ok(Some((stop, h)))
}

/// The node loop's options from its config: `block_limit` is the network's limit,
/// lowered by the node's own if it sets one.
fn node_options(
    cfg: &NodeConfig,
    block_limit: usize,
    (verify_tiles, verify_batch): (usize, usize),
) -> NodeOptions {
    let mut opts = NodeOptions::new(&cfg.id, cfg.peers.iter().map(|p| p.id.clone()).collect());
    opts.max_block_txs = block_limit;
    opts.mempool_capacity = cfg.mempool_capacity;
    opts.lead_until = cfg.lead_until_slot;
    opts.forge = cfg.forge;
    opts.verify_tiles = verify_tiles;
    opts.verify_batch = verify_batch;
    opts.forge_at = cfg.forge_at;
    opts.replay_threads = cfg
        .replay_threads
        .unwrap_or_else(dyno_txn::replay::default_replay_threads);
    opts.bank_tiles = cfg.bank_tiles.unwrap_or(1);
    opts
}

impl RunningNode {
    /// Binds the metrics listener (answering 503 on `/ready` until the rest is up), the
    /// QUIC ingress, then the peer listener (only then are peers dialed), then starts
    /// the node loop; `/ready` answers 200 after that. `cfg` must have passed
    /// [`crate::config::LoadedConfig::check`] against `genesis`.
    pub fn start(cfg: &NodeConfig, genesis: Arc<Genesis>) -> Result<RunningNode> {
        let block_limit = cfg
            .max_block_txs
            .map_or(genesis.file.max_block_txs as usize, |m| {
                m.min(genesis.file.max_block_txs as usize)
            });
        let shown = Shown::default();
        let http = start_endpoint(cfg.metrics_listen, &shown)?;
        let metrics_addr = http.as_ref().map(MetricsEndpoint::addr);
        let log = Arc::new(EventLog::open(&cfg.id, cfg.node_log.as_deref())?);
        // Every listener is bound before any peer is dialed: a peer that links at once
        // (and relays or asks for blocks) finds this node whole, and /ready's "listeners
        // bound" is true of the QUIC socket too.
        let (inbox, rx) = channel();
        let admission = Arc::new(Admission::new(cfg.mempool_capacity));
        let verify_tiles = cfg
            .verify_tiles
            .unwrap_or_else(crate::verify::default_verify_tiles);
        // Threads that check signatures, and the batch each checks at once.
        let verify = (
            verify_tiles,
            cfg.verify_batch
                .unwrap_or(crate::verify::DEFAULT_VERIFY_BATCH),
        );
        let (ingress, verified) = start_ingress(cfg, &genesis, &inbox, &admission, verify)?.unzip();
        let (net, events) = start_peers(cfg, &genesis)?;
        let net = Arc::new(net);
        *shown.net.lock().unwrap_or_else(|p| p.into_inner()) = Some(net.clone());
        let peer_addr = net.local_addr();
        let check = RelayCheck::start(verify.0, inbox.clone())
            .map_err(|e| Error::Net(format!("relay check threads: {e}")))?;
        let forwarder = spawn_forwarder(events, inbox.clone(), check)?;
        let ingress_addr = ingress.as_ref().map(|i| i.local_addr());
        *shown.ingress.lock().unwrap_or_else(|p| p.into_inner()) = ingress.clone();
        let opts = node_options(cfg, block_limit, verify);
        let control = start_control(cfg, &opts, &net, &log)?;
        let node = Node::new(
            opts,
            genesis,
            log,
            Box::new(NetTransport(net.clone())),
            shown.status.clone(),
        )
        .with_admission(admission);
        // Stopped by an Input::Stop (see `shutdown`), never by the flag.
        let s = AtomicBool::new(false);
        let handle = std::thread::Builder::new()
            .name("node".into())
            .spawn(move || node.run(rx, &s))
            .map_err(|e| Error::Net(format!("node thread: {e}")))?;
        shown.ready.store(true, Ordering::SeqCst);
        Ok(RunningNode {
            inbox,
            node: Some(handle),
            forwarder: Some(forwarder),
            net: Some(net),
            ingress,
            verified,
            http,
            control,
            status: shown.status,
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

    /// Client transactions the ingress's verify threads checked so far: (passed,
    /// refused) summed over the threads (none without ingress). What the admission gate
    /// refused never gets here.
    pub fn verified(&self) -> Option<(u64, u64)> {
        self.verified.as_ref().map(|t| {
            t.counts()
                .into_iter()
                .fold((0, 0), |(p, r), (tp, tr)| (p + tp, r + tr))
        })
    }

    /// Stops the node, joins every thread; returns its final status.
    pub fn stop(mut self) -> Status {
        self.shutdown().expect("the node thread ran")
    }

    fn shutdown(&mut self) -> Option<Status> {
        // Dropping the endpoint stops and joins its thread.
        drop(self.http.take());
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

/// The `dyno_build_info` gauge: which build serves these metrics.
fn build_info() -> String {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    dyno_obs::build_info_text(&[("version", env!("CARGO_PKG_VERSION")), ("profile", profile)])
}
