//! A node with its real network: `dyno-net` peer links, the metrics and readiness
//! endpoint, and the node loop on its own thread. [`RunningNode::start`] binds every
//! listener before anything runs (an address that cannot be bound is an error naming
//! it); [`RunningNode::stop`] stops and joins everything, the log flushed.
//!
//! Threads, and only these (see [`NodeConfig::threads`]): the node loop (blocks on its
//! inbox), ONE I/O thread whose tasks are every socket of the node (the peer links and
//! their shaping timer, the QUIC ingress, the metrics endpoint), the hand-over of the
//! peer network's events to the loop and the control file's watcher, and the
//! `verify_tiles` threads that check the signatures of the ingress's transactions and
//! of the peers' relay frames. None polls; the count does not grow with the node's
//! peers or the machine's cores. (A byzantine node under test floods on a thread of its
//! own while its `garbage` fault is on.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dyno_net::{
    Ingress, IngressConfig, IngressCounters, IoThread, LinkShape, NetError, PeerConfig, PeerEvent,
    PeerNet, PeerOptions, PeerSpec,
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

    fn disconnect(&self, peer: &str, reason: &str, ban: Duration) -> bool {
        self.0.disconnect(peer, reason, ban)
    }

    fn taken(&self, peer: &str, bytes: usize) {
        self.0.taken(peer, bytes);
    }
}

/// A running node.
pub struct RunningNode {
    inbox: Sender<Input>,
    node: Option<JoinHandle<Status>>,
    /// The thread every socket of the node runs on.
    io: Option<IoThread>,
    net: Option<Arc<PeerNet>>,
    ingress: Option<Arc<Ingress>>,
    /// The ingress's transactions' counts on the verify threads (none without ingress).
    verified: Option<VerifyTally>,
    http: Option<MetricsEndpoint>,
    /// The control file's watcher (a task on the I/O thread).
    control: Option<tokio::task::JoinHandle<()>>,
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

fn start_endpoint(
    io: &IoThread,
    addr: Option<SocketAddr>,
    shown: &Shown,
) -> Result<Option<MetricsEndpoint>> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let shown = shown.clone();
    MetricsEndpoint::start_on(io.handle(), addr, move |path| shown.route(path))
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

/// The verify threads: the ingress's transactions go through them into `inbox` with
/// their verdicts; the peers' relay frames are checked there too ([`RelayCheck::on`]).
fn start_verify(
    inbox: &Sender<Input>,
    (verify_tiles, verify_batch): (usize, usize),
) -> Result<Arc<VerifyPool>> {
    let out = inbox.clone();
    let pool = VerifyPool::start(verify_tiles, verify_batch, move |bytes, signature_ok| {
        out.send(Input::CheckedTx {
            bytes,
            signature_ok,
        })
        .is_ok()
    })
    .map_err(|e| Error::Net(format!("verify threads: {e}")))?;
    Ok(Arc::new(pool))
}

/// The QUIC ingress on the I/O thread, whose transactions pass the admission gate, then
/// go through the verify threads (`pool`) to the node loop.
fn start_ingress(
    io: &IoThread,
    cfg: &NodeConfig,
    genesis: &Genesis,
    admission: &Arc<Admission>,
    pool: &Arc<VerifyPool>,
) -> Result<Option<Arc<Ingress>>> {
    let Some(listen) = cfg.ingress_listen else {
        return Ok(None);
    };
    // Signatures are checked on the verify threads, not on the I/O thread (one
    // thread's Ed25519 rate capped the node there): the sink only counts and queues.
    // Refused before the verify threads when the mempool could not keep it (graceful
    // overload, see `crate::admission`): a refusal costs a counter read.
    // While the gate would refuse, streams are not read at all (their clients' writes
    // stop at QUIC's flow-control window).
    let gate = admission.clone();
    let room = dyno_net::Room {
        has_room: Box::new(move || gate.has_room()),
        max_pause: dyno_net::Room::MAX_PAUSE,
    };
    let (admission, pool) = (admission.clone(), pool.clone());
    let sink = move |tx: &[u8]| admission.admit().is_ok() && pool.submit(tx.to_vec());
    let cfg = IngressConfig {
        listen,
        genesis_hash: genesis.hash.0,
        max_frame: dyno_txn::tx::MAX_TX_LEN,
        max_tps_per_connection: cfg.ingress_tps_per_connection,
    };
    let ingress =
        Ingress::start_on_paused(io.handle(), cfg, sink, Some(room)).map_err(net_error)?;
    Ok(Some(Arc::new(ingress)))
}

/// The peer network on the I/O thread. Its events go straight into the node loop's
/// inbox, relay frames through `check` (their signatures checked on the verify
/// threads, off the loop, see [`crate::relay_check`]). A message's bytes count against
/// its peer's inbound budget ([`PeerOptions::max_inbound_bytes`]) until the loop has
/// handled it ([`Transport::taken`]), relay frames until the loop takes their checked
/// transactions: a peer that sends faster than the loop works has its link's reader
/// stopped and its TCP window filled instead of growing this node's memory.
fn start_peers(
    io: &IoThread,
    cfg: &NodeConfig,
    genesis: &Genesis,
    inbox: Sender<Input>,
    check: RelayCheck,
) -> Result<PeerNet> {
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
        genesis_hash: genesis.hash.0,
        listen: cfg.peer_listen,
        max_frame: max_frame(genesis.file.max_block_txs as usize),
    };
    // Only the I/O thread calls it: the lock is never contended.
    let check = Mutex::new(check);
    let emit = move |ev: PeerEvent| {
        let input = match ev {
            PeerEvent::Message {
                peer,
                payload,
                received_ns,
            } => match Message::decode_txs(&payload) {
                Some(txs) => {
                    // A node loop that has ended no longer wants them.
                    let _ = check
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .submit(peer, txs);
                    return;
                }
                None => Input::Peer {
                    peer,
                    payload,
                    received_ns,
                },
            },
            PeerEvent::Connected { peer } => Input::Connected(peer),
            PeerEvent::Disconnected { peer, reason } => Input::Disconnected { peer, reason },
            PeerEvent::Refused { remote, reason } => Input::Refused {
                remote: remote.to_string(),
                reason: reason.as_str().to_string(),
            },
        };
        // A node loop that has ended no longer wants events; that is not an error.
        let _ = inbox.send(input);
    };
    PeerNet::start_on(io.handle(), config, peers, PeerOptions::default(), emit).map_err(net_error)
}

/// The control file's watcher (link faults, clock skew, the misbehaviour switch) as a
/// task on the I/O thread, if the config names a control file.
fn start_control(
    io: &IoThread,
    cfg: &NodeConfig,
    opts: &NodeOptions,
    net: &Arc<PeerNet>,
    log: &Arc<EventLog>,
) -> Option<tokio::task::JoinHandle<()>> {
    let path = cfg.control.as_ref()?;
    let mut applier = crate::control::ControlApplier {
        watch: crate::control::ControlWatch::new(path.clone()),
        peers: opts.peers.clone(),
        net: net.clone(),
        to: crate::control::Controlled {
            skew: opts.clock_skew_ns.clone(),
            misbehave: opts.misbehave.clone(),
            log: log.clone(),
        },
        flood: None,
    };
    Some(io.handle().spawn(async move {
        let mut every = tokio::time::interval(crate::control::CONTROL_POLL);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            every.tick().await;
            applier.step();
        }
    }))
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
        let io = IoThread::start("node-io", dyno_net::shape::TimerPrecision::default())
            .map_err(net_error)?;
        let http = start_endpoint(&io, cfg.metrics_listen, &shown)?;
        let metrics_addr = http.as_ref().map(MetricsEndpoint::addr);
        let log = Arc::new(EventLog::open(&cfg.id, cfg.node_log.as_deref())?);
        // Every listener is bound before any peer is dialed: a peer that links at once
        // (and relays or asks for blocks) finds this node whole, and /ready's "listeners
        // bound" is true of the QUIC socket too.
        let (inbox, rx) = channel();
        let admission = Arc::new(Admission::new(cfg.mempool_capacity));
        let verify_tiles = cfg
            .verify_tiles
            .unwrap_or(crate::verify::DEFAULT_VERIFY_TILES);
        // Threads that check signatures, and the batch each checks at once.
        let verify = (
            verify_tiles,
            cfg.verify_batch
                .unwrap_or(crate::verify::DEFAULT_VERIFY_BATCH),
        );
        let pool = start_verify(&inbox, verify)?;
        let ingress = start_ingress(&io, cfg, &genesis, &admission, &pool)?;
        let verified = ingress.as_ref().map(|_| pool.tally());
        let check = RelayCheck::on(pool.jobs(), inbox.clone());
        // The ingress's sink and the relay check hold the threads from here on.
        drop(pool);
        let net = Arc::new(start_peers(&io, cfg, &genesis, inbox.clone(), check)?);
        *shown.net.lock().unwrap_or_else(|p| p.into_inner()) = Some(net.clone());
        let peer_addr = net.local_addr();
        let ingress_addr = ingress.as_ref().map(|i| i.local_addr());
        *shown.ingress.lock().unwrap_or_else(|p| p.into_inner()) = ingress.clone();
        let opts = node_options(cfg, block_limit, verify);
        let control = start_control(&io, cfg, &opts, &net, &log);
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
            io: Some(io),
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

    /// Client transactions the verify threads checked so far: (passed, refused) summed
    /// over the threads (none without ingress). What the admission gate refused never
    /// gets here; relay frames checked on the same threads are not counted.
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
        // Dropping the endpoint ends its task.
        drop(self.http.take());
        // Ingress before the loop: nothing new arrives while the loop takes in what is
        // queued. The metrics task held the only other reference.
        if let Some(i) = self.ingress.take().and_then(|i| Arc::try_unwrap(i).ok()) {
            i.shutdown();
        }
        // A Stop message, not the flag: it queues behind every transaction already
        // handed over, so each of them gets its fate before the loop ends.
        let _ = self.inbox.send(Input::Stop);
        let status = self.node.take().and_then(|h| h.join().ok());
        if let (Some(control), Some(io)) = (self.control.take(), &self.io) {
            // Ending the task drops its applier, which stops a flood that runs.
            control.abort();
            dyno_net::io::join_task(io.handle(), control);
        }
        if let Some(net) = self.net.take() {
            // The node loop (and its transport), the metrics task and the control task
            // are gone: this is the last reference.
            if let Ok(net) = Arc::try_unwrap(net) {
                net.shutdown();
            }
        }
        if let Some(io) = self.io.take() {
            io.stop();
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
