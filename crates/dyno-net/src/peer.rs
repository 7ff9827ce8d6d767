//! The peer network: one framed TCP link per peer pair, handshake, shaping, events.
//!
//! All of one [`PeerNet`] runs as tasks on ONE I/O thread (a tokio current-thread
//! runtime, [`crate::io::IoThread`]): the acceptor, one dialer per peer this node dials
//! (it runs the handshake, then reads the link it made, and redials when the link
//! drops), one handler per inbound connection (handshake, then reads), one writer per
//! link, and the shaping timer. The thread is the network's own ([`PeerNet::start`]) or
//! shared with the rest of a node's sockets ([`PeerNet::start_on`]); either way a node's
//! thread count does not grow with its peers. [`PeerNet::shutdown`] ends every task.
//! The API stays synchronous: `send` and the queries may be called from any thread.
//!
//! Who dials: of two nodes that list each other, the one with the smaller id (byte
//! order). So a pair never makes two links by dialing at the same moment, and a restarted
//! dialer finds its peer waiting. An inbound link from a listed peer replaces an older one
//! to that peer (the older is assumed dead: the peer restarted). A listed peer with a
//! smaller id that never dials (it does not list this node) leaves no error anywhere, so
//! [`PeerNet::awaiting_dial`] names it once [`PeerOptions::dial_grace`] has passed.
//!
//! What a peer can make this node hold is bounded ([`PeerOptions`]): bytes queued to a
//! peer that does not read, bytes read from a peer and not yet taken by the node, how
//! far ahead a frame may ask to be delivered, handshakes in progress. A peer the node
//! finds misbehaving is cut and refused for a while ([`PeerNet::disconnect`]).
//!
//! Shaping is decided by the SENDER (its [`PeerSpec::shape`] for that peer, its own wire
//! queue) and carried out by the RECEIVER: each data frame carries the unix-ns time it may
//! be delivered, and the receiver's timer task holds it until then (on a kernel timer of
//! nanosecond resolution, not the runtime's millisecond ticks). The frame travels at once,
//! so loopback transit and the writer's scheduling do not add to the delay; this needs
//! both ends on one clock, which holds for the local clusters it is made for (nodes on
//! different machines use real links or `tc netem`, and an unshaped [`LinkShape`]).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::runtime::Handle;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::error::NetError;
use crate::fault::{Draws, LinkFault};
use crate::frame::{self, nonblocking as wire, Hello, ReadError, RefuseReason};
use crate::io::{join_task, IoThread};
use crate::shape::{lock, unix_ns, LinkSchedule, LinkShape};

mod accept;
mod events;
mod options;
mod timer;

use accept::{accept_loop, dial_handshake};
use events::InboundBudget;
pub use events::PeerEvents;
pub use options::{DialWait, PeerOptions};

/// How long a remote may take to complete its side of the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Dial retry backoff: first wait, doubling up to the cap.
const BACKOFF_FIRST: Duration = Duration::from_millis(20);
const BACKOFF_CAP: Duration = Duration::from_millis(500);
/// How often a dialer whose peer dialed in instead checks that link is still there.
const LINKED_POLL: Duration = Duration::from_millis(100);

/// This node's side of the peer network.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// This node's id, sent in the handshake.
    pub node_id: String,
    /// Sent in the handshake; a peer with another one is refused (`wrong_genesis`).
    pub genesis_hash: [u8; 32],
    /// Peer listener address (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Largest payload accepted; a longer frame disconnects the peer (`oversized`).
    pub max_frame: usize,
}

/// One peer of this node.
#[derive(Clone, Debug)]
pub struct PeerSpec {
    /// The peer's node id.
    pub id: String,
    /// The peer's listener address, `host:port`: an IP address or a host name
    /// (`node-3.dyno:7000`), resolved on every dial attempt, so an address a scheduler
    /// assigns (and may move) is followed without restarting this node.
    pub addr: String,
    /// Shaping of the direction from this node to that peer.
    pub shape: LinkShape,
}

/// What happens on the peer network, in order per peer.
#[derive(Clone, Debug, PartialEq)]
pub enum PeerEvent {
    /// A link to `peer` completed its handshake.
    Connected {
        /// The peer's id.
        peer: String,
    },
    /// A payload from `peer`, delivered at `received_ns` (wall-clock unix ns).
    Message {
        /// The sender's id.
        peer: String,
        /// The bytes it sent.
        payload: Vec<u8>,
        /// When it was delivered (after the link's shaping).
        received_ns: u64,
    },
    /// The link to `peer` is gone. Messages sent on it were delivered first, except when
    /// a newer link from the same peer replaced it: shaped messages of the old link still
    /// in flight then follow the new link's `Connected`.
    Disconnected {
        /// The peer's id.
        peer: String,
        /// Why, for the log.
        reason: String,
    },
    /// A connection was refused in its handshake, or a link was cut for breaking the
    /// protocol (then `Disconnected` follows for that peer).
    Refused {
        /// The remote end of the connection.
        remote: SocketAddr,
        /// Why.
        reason: RefuseReason,
    },
}

/// Traffic and refusal counts of a [`PeerNet`] since it started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerCounters {
    /// Data frames written to peers.
    pub frames_out: u64,
    /// Payload bytes in those frames.
    pub bytes_out: u64,
    /// Data frames received from peers.
    pub frames_in: u64,
    /// Payload bytes in those frames.
    pub bytes_in: u64,
    /// Links that were established and then went away.
    pub disconnects: u64,
    /// `send` calls refused because the payload exceeded `max_frame`.
    pub send_oversized: u64,
    /// Links cut because the peer did not read what was queued to it
    /// ([`PeerOptions::max_queued_bytes`]).
    pub slow_peers: u64,
    /// Inbound connections closed in their handshake to make room for a new one because
    /// [`PeerOptions::max_handshakes`] (or [`PeerOptions::max_handshakes_per_source`] of
    /// their address) were in progress: the oldest that had sent nothing, else the oldest.
    pub handshakes_shed: u64,
    /// Failed `accept` calls (out of descriptors, a connection reset in the backlog).
    pub accept_errors: u64,
    /// Frames a link fault lost or a cut link swallowed ([`PeerNet::set_fault`]).
    pub fault_dropped: u64,
    /// Links this node cut because the node found the peer misbehaving
    /// ([`PeerNet::disconnect`]).
    pub misbehaving_cut: u64,
    /// Times a link's reader paused because its peer had
    /// [`PeerOptions::max_inbound_bytes`] read and not yet taken by the node.
    pub inbound_paused: u64,
    /// Listed peers this node waits on to dial it, right now ([`PeerNet::awaiting_dial`]).
    pub awaiting_dial: u64,
    /// Connections refused or cut, by reason.
    pub refused: BTreeMap<RefuseReason, u64>,
}

impl PeerCounters {
    /// Refusals of every reason.
    pub fn refused_total(&self) -> u64 {
        self.refused.values().sum()
    }

    /// Refusals of one reason.
    pub fn refused(&self, reason: RefuseReason) -> u64 {
        self.refused.get(&reason).copied().unwrap_or(0)
    }
}

/// A message or a disconnection waiting for its shaped delivery time.
enum Delivery {
    Message { peer: String, payload: Vec<u8> },
    Event(PeerEvent),
}

/// Bytes of a link's read and write buffers. Small: a node has a link per peer, and a
/// frame longer than the buffer is read straight into its own allocation anyway.
const LINK_BUFFER: usize = 16 * 1024;

struct Link {
    conn: u64,
    /// A second descriptor of the link's socket: shutting it down cuts the link's reader
    /// and writer from any thread (a slow peer cut by `send`, a shutdown).
    stream: TcpStream,
    frames: UnboundedSender<Vec<u8>>,
    /// Bytes in `frames` not yet written to the socket (the writer subtracts them).
    queued: Arc<AtomicUsize>,
    schedule: LinkSchedule,
    /// Why this side cut the link, once it did; the reader reports it when the link ends.
    cut: Option<String>,
}

#[derive(Default)]
struct Traffic {
    frames_out: AtomicU64,
    bytes_out: AtomicU64,
    frames_in: AtomicU64,
    bytes_in: AtomicU64,
    disconnects: AtomicU64,
    send_oversized: AtomicU64,
    slow_peers: AtomicU64,
    handshakes_shed: AtomicU64,
    accept_errors: AtomicU64,
    fault_dropped: AtomicU64,
    misbehaving_cut: AtomicU64,
    inbound_paused: AtomicU64,
}

/// Where events go: a channel the caller reads ([`PeerNet::start`]) or the caller's own
/// function ([`PeerNet::start_on`]), called on the I/O thread.
type Emit = Box<dyn Fn(PeerEvent) + Send + Sync>;

struct Shared {
    cfg: PeerConfig,
    opts: PeerOptions,
    peers: HashMap<String, PeerSpec>,
    events: Emit,
    links: Mutex<HashMap<String, Link>>,
    /// Every open stream, handshaking or linked (a second descriptor of each), so
    /// shutdown can cut them.
    streams: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    traffic: Traffic,
    refused: Mutex<BTreeMap<RefuseReason, u64>>,
    stopping: AtomicBool,
    /// Inbound connections between accept and the end of their handshake.
    handshakes: Mutex<accept::Handshakes>,
    /// When each listed peer last lost its link (absent: never linked; then `started`).
    unlinked_since: Mutex<HashMap<String, Instant>>,
    started: Instant,
    /// The runtime every task of this network runs on.
    rt: Handle,
    /// Every task of this network not known to have ended.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Frames and events waiting for their delivery time, to the timer task.
    timer: UnboundedSender<timer::Timed<Delivery>>,
    /// Faults set on the links to peers ([`PeerNet::set_fault`]), with the draws for
    /// their loss and jitter.
    faults: Mutex<(HashMap<String, LinkFault>, Draws)>,
    /// Bytes of each peer's messages read and not yet taken by the node.
    inbound: Arc<InboundBudget>,
    /// Peers cut for misbehaving, and until when they are refused.
    bans: Mutex<HashMap<String, Instant>>,
}

/// A running peer network. Dropping it shuts it down like [`PeerNet::shutdown`].
pub struct PeerNet {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
    /// The I/O thread this network started for itself (none: it runs on the caller's).
    own_io: Option<IoThread>,
}

impl PeerNet {
    /// Binds the peer listener (an error names the address), dials every listed peer
    /// whose id is greater than this node's (retrying with backoff until connected or
    /// shut down) and accepts the others, all on an I/O thread of its own named
    /// `net-io-<id>`. Events arrive on the returned receiver, which gives each
    /// message's bytes back to its peer's inbound budget as it hands it over. Limits
    /// are [`PeerOptions::default`].
    pub fn start(cfg: PeerConfig, peers: Vec<PeerSpec>) -> Result<(PeerNet, PeerEvents), NetError> {
        PeerNet::start_with(cfg, peers, PeerOptions::default())
    }

    /// Like [`PeerNet::start`], with the given limits and timer.
    pub fn start_with(
        cfg: PeerConfig,
        peers: Vec<PeerSpec>,
        opts: PeerOptions,
    ) -> Result<(PeerNet, PeerEvents), NetError> {
        let io = IoThread::start(&thread_name("io", &cfg.node_id), opts.timer)?;
        let (tx, rx) = mpsc::channel();
        // A receiver that was dropped no longer wants events; that is not an error.
        let emit = move |e: PeerEvent| {
            let _ = tx.send(e);
        };
        let mut net = PeerNet::start_on(io.handle(), cfg, peers, opts, emit)?;
        net.own_io = Some(io);
        let events = PeerEvents::new(rx, Arc::clone(&net.shared.inbound));
        Ok((net, events))
    }

    /// Like [`PeerNet::start_with`] on the caller's runtime (a node's one I/O thread,
    /// [`IoThread::handle`]), handing each event to `emit` as it happens, on that thread
    /// (it should be quick: a channel send). The runtime's thread sets the timer's
    /// precision ([`IoThread::start`]); `opts.timer` is not used here. Each message's
    /// bytes count against its peer's inbound budget ([`PeerOptions::max_inbound_bytes`])
    /// until the caller gives them back with [`PeerNet::taken`], once the node has
    /// handled it: a node that falls behind stops its links' readers.
    pub fn start_on(
        rt: &Handle,
        cfg: PeerConfig,
        peers: Vec<PeerSpec>,
        opts: PeerOptions,
        emit: impl Fn(PeerEvent) + Send + Sync + 'static,
    ) -> Result<PeerNet, NetError> {
        let mut by_id = HashMap::new();
        for p in peers {
            if p.id == cfg.node_id {
                return Err(NetError::PeerList(format!(
                    "peer {} at {} is this node itself",
                    p.id, p.addr
                )));
            }
            if let Some(old) = by_id.insert(p.id.clone(), p) {
                return Err(NetError::PeerList(format!("peer {} listed twice", old.id)));
            }
        }
        let bind = |source| NetError::Bind {
            what: "peer",
            addr: cfg.listen,
            source,
        };
        let listener = std::net::TcpListener::bind(cfg.listen).map_err(bind)?;
        let local_addr = listener.local_addr().map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let listener = {
            let _in_runtime = rt.enter();
            tokio::net::TcpListener::from_std(listener).map_err(bind)?
        };
        let (timer_tx, timer_rx) = unbounded_channel();
        let shared = Arc::new(Shared::new(
            cfg,
            opts,
            by_id,
            Box::new(emit),
            rt.clone(),
            timer_tx,
        ));
        let deliver_to = Arc::clone(&shared);
        shared.spawn(timer::run(timer_rx, move |d, now| {
            deliver_to.deliver(d, now)
        }));
        let acc = Arc::clone(&shared);
        shared.spawn(async move { accept_loop(&acc, &listener).await });
        let mut dialed: Vec<PeerSpec> = shared
            .peers
            .values()
            .filter(|p| p.id > shared.cfg.node_id)
            .cloned()
            .collect();
        dialed.sort_by(|a, b| a.id.cmp(&b.id));
        for spec in dialed {
            let s = Arc::clone(&shared);
            shared.spawn(async move { dial_loop(&s, &spec).await });
        }
        Ok(PeerNet {
            shared,
            local_addr,
            own_io: None,
        })
    }

    /// The bound peer listener address (the real port when `listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Queues `payload` to `peer`, shaped by that peer's [`LinkShape`]. False when the
    /// peer is not connected, the payload exceeds `max_frame` (counted `send_oversized`),
    /// or the peer has [`PeerOptions::max_queued_bytes`] unread: then the link is cut
    /// (counted `slow_peers`; `Disconnected` follows with the reason).
    pub fn send(&self, peer: &str, payload: Vec<u8>) -> bool {
        self.send_scheduled(peer, payload).is_some()
    }

    /// Like [`PeerNet::send`], and returns when the far side will deliver the payload
    /// (unix ns; for an unshaped link, the time it was queued): None when not sent.
    pub fn send_scheduled(&self, peer: &str, payload: Vec<u8>) -> Option<u64> {
        if payload.len() > self.shared.cfg.max_frame {
            self.shared.traffic.send_oversized.fetch_add(1, Relaxed);
            return None;
        }
        let mut links = lock(&self.shared.links);
        let link = links.get_mut(peer)?;
        if link.cut.is_some() {
            return None;
        }
        let bytes = payload.len() + frame::DATA_OVERHEAD;
        let queued = link.queued.load(Relaxed);
        let limit = self.shared.opts.max_queued_bytes;
        if queued > 0 && queued + bytes > limit {
            // The reader sees the shutdown, retires the link and reports this reason.
            link.cut = Some(format!(
                "slow peer: {queued} bytes queued to it unread, the limit is {limit} \
                 (PeerOptions::max_queued_bytes)"
            ));
            self.shared.traffic.slow_peers.fetch_add(1, Relaxed);
            let _ = link.stream.shutdown(Shutdown::Both);
            return None;
        }
        let now = unix_ns();
        let fault = {
            let mut f = lock(&self.shared.faults);
            let (faults, draws) = &mut *f;
            match faults.get(peer) {
                None => None,
                Some(fault) if fault.drops(draws.next_unit()) => {
                    // Lost on the wire: the caller sees it sent, the peer never gets it.
                    self.shared.traffic.fault_dropped.fetch_add(1, Relaxed);
                    return Some(now);
                }
                Some(fault) => Some(fault.shape(link.schedule.shape(), draws.next_unit())),
            }
        };
        let (deliver_at, due) = if let Some(shape) = fault {
            let due = link
                .schedule
                .schedule_as(shape, now, payload.len() + frame::DATA_OVERHEAD);
            (due, due)
        } else if link.schedule.shape().is_unshaped() {
            (0, now)
        } else {
            let due = link
                .schedule
                .schedule(now, payload.len() + frame::DATA_OVERHEAD);
            (due, due)
        };
        link.queued.fetch_add(bytes, Relaxed);
        match link.frames.send(frame::encode_data(deliver_at, &payload)) {
            Ok(()) => Some(due),
            Err(_) => {
                link.queued.fetch_sub(bytes, Relaxed);
                None
            }
        }
    }

    /// Sets the fault on the direction from this node to `peer` (what a fault schedule
    /// changes while the network runs); [`LinkFault::default`] clears it. It applies to
    /// frames sent from now on, and to a link made later. Frames a fault drops are
    /// counted `fault_dropped`.
    pub fn set_fault(&self, peer: &str, fault: LinkFault) {
        let mut f = lock(&self.shared.faults);
        if fault.is_none() {
            f.0.remove(peer);
        } else {
            f.0.insert(peer.to_string(), fault);
        }
    }

    /// Cuts the link to `peer` for misbehaving (what the node decides, e.g. a flood of
    /// messages that do not decode): `Disconnected` follows with `reason`, and for `ban`
    /// the peer is refused at the handshake (`banned`) and not dialed. Counted
    /// `misbehaving_cut`; false when the peer was not linked (the ban holds anyway).
    pub fn disconnect(&self, peer: &str, reason: &str, ban: Duration) -> bool {
        lock(&self.shared.bans).insert(peer.to_string(), Instant::now() + ban);
        let mut links = lock(&self.shared.links);
        let Some(link) = links.get_mut(peer).filter(|l| l.cut.is_none()) else {
            return false;
        };
        link.cut = Some(format!(
            "misbehaving: {reason}; refused for {:.1} s",
            ban.as_secs_f64()
        ));
        self.shared.traffic.misbehaving_cut.fetch_add(1, Relaxed);
        let _ = link.stream.shutdown(Shutdown::Both);
        true
    }

    /// Writes `bytes` to `peer` as they are, unframed: the misbehaviour switch of a
    /// byzantine node under test (a cluster's `garbage` fault) uses it to send what no
    /// honest node sends, such as a frame longer than any limit. False when not linked.
    pub fn send_raw(&self, peer: &str, bytes: Vec<u8>) -> bool {
        let links = lock(&self.shared.links);
        let Some(link) = links.get(peer).filter(|l| l.cut.is_none()) else {
            return false;
        };
        let n = bytes.len();
        link.queued.fetch_add(n, Relaxed);
        if link.frames.send(bytes).is_err() {
            link.queued.fetch_sub(n, Relaxed);
            return false;
        }
        true
    }

    /// Gives `bytes` of `peer`'s messages back to its inbound budget: what a caller of
    /// [`PeerNet::start_on`] calls once the node has handled a message (a caller of
    /// [`PeerNet::start`] never does: [`PeerEvents`] gives them back as it hands them over).
    pub fn taken(&self, peer: &str, bytes: usize) {
        self.shared.inbound.give(peer, bytes);
    }

    /// Bytes of `peer`'s messages read from its link and not yet given back (by
    /// [`PeerEvents`] or [`PeerNet::taken`]).
    pub fn inbound_bytes(&self, peer: &str) -> usize {
        self.shared.inbound.pending(peer)
    }

    /// Bytes queued to `peer` and not yet written to its socket; none when not linked.
    pub fn queued_bytes(&self, peer: &str) -> Option<usize> {
        lock(&self.shared.links)
            .get(peer)
            .map(|l| l.queued.load(Relaxed))
    }

    /// Listed peers with a smaller id (they dial, this node only accepts) that have been
    /// unlinked for longer than [`PeerOptions::dial_grace`], sorted by id. Each displays
    /// as `waiting for ID to dial us ... (it must list this node ...)`: the usual cause
    /// is a peer list on that node that lacks this one, which no error reports otherwise.
    pub fn awaiting_dial(&self) -> Vec<DialWait> {
        self.shared.awaiting_dial()
    }

    /// Ids of the peers with an established link, sorted.
    pub fn connected(&self) -> Vec<String> {
        let mut ids: Vec<String> = lock(&self.shared.links).keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Counts since start.
    pub fn counters(&self) -> PeerCounters {
        let t = &self.shared.traffic;
        PeerCounters {
            frames_out: t.frames_out.load(Relaxed),
            bytes_out: t.bytes_out.load(Relaxed),
            frames_in: t.frames_in.load(Relaxed),
            bytes_in: t.bytes_in.load(Relaxed),
            disconnects: t.disconnects.load(Relaxed),
            send_oversized: t.send_oversized.load(Relaxed),
            slow_peers: t.slow_peers.load(Relaxed),
            handshakes_shed: t.handshakes_shed.load(Relaxed),
            accept_errors: t.accept_errors.load(Relaxed),
            fault_dropped: t.fault_dropped.load(Relaxed),
            misbehaving_cut: t.misbehaving_cut.load(Relaxed),
            inbound_paused: t.inbound_paused.load(Relaxed),
            awaiting_dial: self.shared.awaiting_dial().len() as u64,
            refused: lock(&self.shared.refused).clone(),
        }
    }

    /// Closes every connection and the listener and ends every task (and the network's
    /// own I/O thread). Messages still held by the shaping timer are dropped; no event
    /// follows.
    pub fn shutdown(self) {
        drop(self);
    }

    fn stop(&mut self) {
        let s = &self.shared;
        s.stopping.store(true, Relaxed);
        for (_, link) in lock(&s.links).drain() {
            let _ = link.stream.shutdown(Shutdown::Both);
        }
        for stream in lock(&s.streams).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Tasks spawned while we wait (a handler of a connection accepted just now)
        // are aborted in the next round: loop until none is left.
        loop {
            let batch: Vec<_> = lock(&s.tasks).drain(..).collect();
            if batch.is_empty() {
                break;
            }
            for t in &batch {
                t.abort();
            }
            for t in batch {
                join_task(&s.rt, t);
            }
        }
        if let Some(io) = self.own_io.take() {
            io.stop();
        }
    }
}

impl Drop for PeerNet {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    /// The state of a network with no task or link yet.
    fn new(
        cfg: PeerConfig,
        opts: PeerOptions,
        peers: HashMap<String, PeerSpec>,
        events: Emit,
        rt: Handle,
        timer: UnboundedSender<timer::Timed<Delivery>>,
    ) -> Shared {
        Shared {
            inbound: Arc::new(InboundBudget::new(opts.max_inbound_bytes)),
            bans: Mutex::new(HashMap::new()),
            cfg,
            opts,
            peers,
            events,
            links: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            next_conn: AtomicU64::new(1),
            traffic: Traffic::default(),
            refused: Mutex::new(BTreeMap::new()),
            stopping: AtomicBool::new(false),
            handshakes: Mutex::default(),
            unlinked_since: Mutex::new(HashMap::new()),
            started: Instant::now(),
            rt,
            tasks: Mutex::new(Vec::new()),
            timer,
            faults: Mutex::new((HashMap::new(), Draws::new(unix_ns()))),
        }
    }

    /// Runs `task` on the network's runtime, kept so shutdown can end it.
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let h = self.rt.spawn(task);
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(h);
        if self.stopping.load(Relaxed) {
            // Spawned after stop() took the list: it will look again, but end it now.
            if let Some(t) = tasks.last() {
                t.abort();
            }
        }
    }

    fn awaiting_dial(&self) -> Vec<DialWait> {
        let linked: Vec<String> = lock(&self.links).keys().cloned().collect();
        let since = lock(&self.unlinked_since);
        let mut waits: Vec<DialWait> = self
            .peers
            .keys()
            .filter(|id| **id < self.cfg.node_id && !linked.contains(id))
            .map(|id| DialWait {
                peer: id.clone(),
                waited: since.get(id).unwrap_or(&self.started).elapsed(),
            })
            .filter(|w| w.waited >= self.opts.dial_grace)
            .collect();
        waits.sort_by(|a, b| a.peer.cmp(&b.peer));
        waits
    }

    /// How long `peer` is still refused for misbehaving (none: it is not).
    fn banned_for(&self, peer: &str) -> Option<Duration> {
        let mut bans = lock(&self.bans);
        let left = bans
            .get(peer)
            .map(|until| until.saturating_duration_since(Instant::now()));
        match left {
            Some(d) if d.is_zero() => {
                bans.remove(peer);
                None
            }
            other => other,
        }
    }

    /// Refuses `peer` for [`PeerOptions::ban_after_violation`]: its link broke the framing.
    fn ban_for_violation(&self, peer: &str) {
        let until = Instant::now() + self.opts.ban_after_violation;
        lock(&self.bans).insert(peer.to_string(), until);
    }

    /// Waits for `n` bytes of `peer`'s inbound budget; false when the link `conn` was
    /// cut or replaced, or the network stops, meanwhile.
    async fn take_inbound(&self, peer: &str, conn: u64, n: usize) -> bool {
        let pending = self.inbound.pending(peer);
        if pending > 0 && pending.saturating_add(n) > self.opts.max_inbound_bytes {
            self.traffic.inbound_paused.fetch_add(1, Relaxed);
        }
        self.inbound
            .take(peer, n, || {
                self.stopping.load(Relaxed)
                    || !lock(&self.links)
                        .get(peer)
                        .is_some_and(|l| l.conn == conn && l.cut.is_none())
            })
            .await
    }

    fn emit(&self, e: PeerEvent) {
        (self.events)(e);
    }

    fn count_refusal(&self, remote: SocketAddr, reason: RefuseReason) {
        *lock(&self.refused).entry(reason).or_insert(0) += 1;
        self.emit(PeerEvent::Refused { remote, reason });
    }

    fn deliver(&self, d: Delivery, now: u64) {
        match d {
            Delivery::Message { peer, payload } => self.emit(PeerEvent::Message {
                peer,
                payload,
                received_ns: now,
            }),
            Delivery::Event(e) => self.emit(e),
        }
    }

    /// Delivers at `due` (0 or past = now) through the timer so order per link holds.
    fn deliver_at(&self, due: u64, d: Delivery) {
        if due == 0 {
            self.deliver(d, unix_ns());
        } else {
            // Fails only once the timer task has ended, at shutdown.
            let _ = self.timer.send(timer::Timed {
                due_ns: due,
                item: d,
            });
        }
    }

    /// Registers a fresh connection: a number for it, and a second descriptor of its
    /// socket that shutdown (or a cut) shuts down. None once stopping, or when the
    /// descriptor cannot be duplicated (out of descriptors).
    fn open_stream(&self, stream: tokio::net::TcpStream) -> Option<(u64, tokio::net::TcpStream)> {
        let std = stream.into_std().ok()?;
        let clone = std.try_clone().ok()?;
        let stream = tokio::net::TcpStream::from_std(std).ok()?;
        let conn = self.next_conn.fetch_add(1, Relaxed);
        lock(&self.streams).insert(conn, clone);
        if self.stopping.load(Relaxed) {
            // Registered after stop() swept the streams: nobody else will cut it.
            self.close_stream(conn);
            return None;
        }
        Some((conn, stream))
    }

    fn close_stream(&self, conn: u64) {
        if let Some(s) = lock(&self.streams).remove(&conn) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Makes the connection `conn` the link to `peer` (replacing an older one) and starts
    /// its writer.
    fn establish(self: &Arc<Self>, peer: &str, conn: u64, writer: OwnedWriteHalf) -> bool {
        let Some(cut_side) = lock(&self.streams)
            .get(&conn)
            .and_then(|s| s.try_clone().ok())
        else {
            return false;
        };
        let (frames_tx, frames_rx) = unbounded_channel::<Vec<u8>>();
        let shape = self
            .peers
            .get(peer)
            .map_or(LinkShape::UNSHAPED, |p| p.shape);
        let mut links = lock(&self.links);
        if self.stopping.load(Relaxed) {
            return false;
        }
        if let Some(old) = links.remove(peer) {
            let _ = old.stream.shutdown(Shutdown::Both);
            self.traffic.disconnects.fetch_add(1, Relaxed);
            self.emit(PeerEvent::Disconnected {
                peer: peer.to_string(),
                reason: "replaced by a newer connection from the same peer".into(),
            });
        }
        let queued = Arc::new(AtomicUsize::new(0));
        let Ok(on_error) = cut_side.try_clone() else {
            return false;
        };
        let (me, unwritten) = (Arc::clone(self), Arc::clone(&queued));
        self.spawn(async move { me.write_loop(writer, on_error, frames_rx, &unwritten).await });
        links.insert(
            peer.to_string(),
            Link {
                conn,
                stream: cut_side,
                frames: frames_tx,
                queued,
                schedule: LinkSchedule::new(shape),
                cut: None,
            },
        );
        self.emit(PeerEvent::Connected {
            peer: peer.to_string(),
        });
        true
    }

    async fn write_loop(
        &self,
        writer: OwnedWriteHalf,
        cut: TcpStream,
        mut frames: UnboundedReceiver<Vec<u8>>,
        queued: &AtomicUsize,
    ) {
        let mut out = BufWriter::with_capacity(LINK_BUFFER, writer);
        // Ends when the link is dropped from the map (sender gone) or a write fails.
        while let Some(first) = frames.recv().await {
            let mut batch = vec![first];
            while let Ok(f) = frames.try_recv() {
                batch.push(f);
            }
            for f in &batch {
                if out.write_all(f).await.is_err() {
                    let _ = cut.shutdown(Shutdown::Both);
                    return;
                }
            }
            if out.flush().await.is_err() {
                let _ = cut.shutdown(Shutdown::Both);
                return;
            }
            let written: usize = batch.iter().map(Vec::len).sum();
            queued.fetch_sub(written, Relaxed);
            let bytes = written - batch.len() * frame::DATA_OVERHEAD;
            self.traffic
                .frames_out
                .fetch_add(batch.len() as u64, Relaxed);
            self.traffic.bytes_out.fetch_add(bytes as u64, Relaxed);
        }
    }

    /// Reads data frames of an established link until it ends, then retires the link.
    async fn read_link(
        &self,
        peer: &str,
        conn: u64,
        mut input: BufReader<OwnedReadHalf>,
        remote: SocketAddr,
    ) {
        let mut last_due = 0u64;
        let shape = self
            .peers
            .get(peer)
            .map_or(LinkShape::UNSHAPED, |p| p.shape);
        let reason = loop {
            match wire::read_data(&mut input, self.cfg.max_frame).await {
                Ok((due, payload)) => {
                    if let Some(why) = self.too_far_ahead(due, &shape, payload.len()) {
                        self.count_refusal(remote, RefuseReason::Protocol);
                        self.ban_for_violation(peer);
                        break format!("protocol: {why}, from {remote}");
                    }
                    self.traffic.frames_in.fetch_add(1, Relaxed);
                    self.traffic
                        .bytes_in
                        .fetch_add(payload.len() as u64, Relaxed);
                    if !self.take_inbound(peer, conn, payload.len()).await {
                        break "cut while the node had not taken its messages".to_string();
                    }
                    last_due = last_due.max(due);
                    let d = Delivery::Message {
                        peer: peer.to_string(),
                        payload,
                    };
                    self.deliver_at(if due == 0 { 0 } else { last_due }, d);
                }
                Err(ReadError::Refused(r)) => {
                    self.count_refusal(remote, r);
                    self.ban_for_violation(peer);
                    break format!("{r}: protocol violation from {remote}");
                }
                Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    break "closed by peer".to_string();
                }
                Err(ReadError::Io(e)) => break format!("read error: {e}"),
            }
        };
        self.close_stream(conn);
        let mut links = lock(&self.links);
        let current = links.get(peer).is_some_and(|l| l.conn == conn);
        if current && !self.stopping.load(Relaxed) {
            let cut = links.remove(peer).and_then(|l| l.cut);
            lock(&self.unlinked_since).insert(peer.to_string(), Instant::now());
            self.traffic.disconnects.fetch_add(1, Relaxed);
            let e = PeerEvent::Disconnected {
                peer: peer.to_string(),
                reason: cut.unwrap_or(reason),
            };
            // Behind the link's last shaped message, so nothing arrives after it.
            self.deliver_at(
                if last_due > unix_ns() { last_due } else { 0 },
                Delivery::Event(e),
            );
        }
    }

    /// Why a frame's delivery time `due` is further ahead than the link may hold a frame:
    /// [`PeerOptions::max_delivery_ahead`] past now, plus the latency and the serialisation
    /// of this node's own shape for the peer (a symmetric link's, as the sender sees it).
    fn too_far_ahead(&self, due: u64, shape: &LinkShape, len: usize) -> Option<String> {
        if due == 0 {
            return None;
        }
        let allowed = self
            .opts
            .max_delivery_ahead
            .saturating_add(shape.latency)
            .saturating_add(Duration::from_nanos(
                shape.serialisation_ns(len + frame::DATA_OVERHEAD),
            ));
        let now = unix_ns();
        let limit = now.saturating_add(u64::try_from(allowed.as_nanos()).unwrap_or(u64::MAX));
        (due > limit).then(|| {
            format!(
                "a frame asks to be delivered {:.3} s from now, more than the {:.3} s allowed",
                (due - now) as f64 / 1e9,
                allowed.as_secs_f64()
            )
        })
    }

    fn is_linked(&self, peer: &str) -> bool {
        lock(&self.links).contains_key(peer)
    }

    fn my_hello(&self) -> Hello {
        Hello {
            status: 0,
            genesis: self.cfg.genesis_hash,
            node_id: self.cfg.node_id.clone(),
        }
    }
}

async fn dial_loop(s: &Arc<Shared>, spec: &PeerSpec) {
    let mut backoff = BACKOFF_FIRST;
    while !s.stopping.load(Relaxed) {
        if let Some(left) = s.banned_for(&spec.id) {
            // Refused for misbehaving: not dialed until the ban runs out.
            tokio::time::sleep(left).await;
            continue;
        }
        if s.is_linked(&spec.id) {
            // The peer dialed us (it replaced a link we had, or runs another rule).
            tokio::time::sleep(LINKED_POLL).await;
            continue;
        }
        // Resolved again on each try: a name may not resolve yet (its pod is not
        // scheduled) or may point elsewhere after a restart.
        let linked = match connect_by_name(&spec.addr).await {
            Some((stream, remote)) => dial_once(s, spec, stream, remote).await,
            None => false,
        };
        if linked {
            backoff = BACKOFF_FIRST;
        } else {
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(BACKOFF_CAP);
        }
    }
}

/// Handshakes on a fresh connection and reads the link until it ends; true if it linked.
async fn dial_once(
    s: &Arc<Shared>,
    spec: &PeerSpec,
    stream: tokio::net::TcpStream,
    remote: SocketAddr,
) -> bool {
    let Some((conn, stream)) = s.open_stream(stream) else {
        return false;
    };
    let _ = stream.set_nodelay(true);
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::with_capacity(LINK_BUFFER, reader);
    let handshake = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        dial_handshake(s, &mut reader, &mut writer, spec),
    )
    .await
    .unwrap_or(Err(Some(RefuseReason::HandshakeTimeout)));
    let linked = match handshake {
        Ok(()) => {
            let ok = s.establish(&spec.id, conn, writer);
            if ok {
                s.read_link(&spec.id, conn, reader, remote).await;
            }
            ok
        }
        Err(Some(reason)) if !s.stopping.load(Relaxed) => {
            s.count_refusal(remote, reason);
            false
        }
        Err(_) => false,
    };
    s.close_stream(conn);
    linked
}

/// Resolves `addr` (`host:port`) and connects to the first address that answers; none
/// when the name does not resolve or nothing answers. An IP address needs no lookup; a
/// host name is looked up on tokio's blocking pool, so a slow resolver cannot stall the
/// node's other links.
async fn connect_by_name(addr: &str) -> Option<(tokio::net::TcpStream, SocketAddr)> {
    let candidates: Vec<SocketAddr> = match addr.parse::<SocketAddr>() {
        Ok(a) => vec![a],
        Err(_) => tokio::net::lookup_host(addr).await.ok()?.collect(),
    };
    for a in candidates {
        if let Ok(Ok(s)) =
            tokio::time::timeout(HANDSHAKE_TIMEOUT, tokio::net::TcpStream::connect(a)).await
        {
            return Some((s, a));
        }
    }
    None
}

fn thread_name(role: &str, who: &str) -> String {
    // Linux shows 15 bytes of a thread name: the role comes first so it survives.
    format!("net-{role}-{who}")
}
