//! The peer network: one framed TCP link per peer pair, handshake, shaping, events.
//!
//! Threads of one [`PeerNet`]: an acceptor; one dialer per peer this node dials (it runs
//! the handshake and then reads the link it made, and redials when the link drops); one
//! handler per inbound connection (handshake, then reads); one writer per link; and the
//! shaping timer. Every one of them is joined by [`PeerNet::shutdown`].
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
//! be delivered, and the receiver's timer thread holds it until then. The frame travels
//! at once, so loopback transit and the writer's scheduling do not add to the delay; this
//! needs both ends on one clock, which holds for the local clusters it is made for (nodes
//! on different machines use real links or `tc netem`, and an unshaped [`LinkShape`]).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, BufWriter, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::NetError;
use crate::fault::{Draws, LinkFault};
use crate::frame::{self, Hello, ReadError, RefuseReason};
use crate::shape::{lock, unix_ns, DeliveryTimer, LinkSchedule, LinkShape};

mod accept;
mod events;
mod options;

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
    /// Inbound connections closed at once because [`PeerOptions::max_handshakes`] were in
    /// progress.
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

struct Link {
    conn: u64,
    stream: TcpStream,
    frames: Sender<Vec<u8>>,
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

struct Shared {
    cfg: PeerConfig,
    opts: PeerOptions,
    peers: HashMap<String, PeerSpec>,
    /// Not behind a mutex: the real-time timer thread sends here too, and must never wait
    /// for a preempted thread holding a lock.
    events: Sender<PeerEvent>,
    links: Mutex<HashMap<String, Link>>,
    /// Every open stream, handshaking or linked, so shutdown can cut blocked reads.
    streams: Mutex<HashMap<u64, TcpStream>>,
    next_conn: AtomicU64,
    traffic: Traffic,
    refused: Mutex<BTreeMap<RefuseReason, u64>>,
    stopping: AtomicBool,
    /// Inbound connections between accept and the end of their handshake.
    handshakes: AtomicUsize,
    /// When each listed peer last lost its link (absent: never linked; then `started`).
    unlinked_since: Mutex<HashMap<String, Instant>>,
    started: Instant,
    /// Wakes dialers out of their backoff at shutdown.
    nap: (Mutex<()>, Condvar),
    threads: Mutex<Vec<JoinHandle<()>>>,
    timer: Mutex<Option<DeliveryTimer<Delivery>>>,
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
    acceptor: Option<JoinHandle<()>>,
}

impl PeerNet {
    /// Binds the peer listener (an error names the address), dials every listed peer
    /// whose id is greater than this node's (retrying with backoff until connected or
    /// shut down) and accepts the others. Events arrive on the returned receiver.
    /// Limits are [`PeerOptions::default`].
    pub fn start(cfg: PeerConfig, peers: Vec<PeerSpec>) -> Result<(PeerNet, PeerEvents), NetError> {
        PeerNet::start_with(cfg, peers, PeerOptions::default())
    }

    /// Like [`PeerNet::start`], with the given limits and timer.
    pub fn start_with(
        cfg: PeerConfig,
        peers: Vec<PeerSpec>,
        opts: PeerOptions,
    ) -> Result<(PeerNet, PeerEvents), NetError> {
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
        let listener = TcpListener::bind(cfg.listen).map_err(|source| NetError::Bind {
            what: "peer",
            addr: cfg.listen,
            source,
        })?;
        let local_addr = listener.local_addr().map_err(|source| NetError::Bind {
            what: "peer",
            addr: cfg.listen,
            source,
        })?;
        let (events_tx, events_rx) = mpsc::channel();
        let shared = Arc::new(Shared::new(cfg, opts, by_id, events_tx));
        let events_rx = PeerEvents::new(events_rx, Arc::clone(&shared.inbound));
        let deliver_to = Arc::clone(&shared);
        let timer = DeliveryTimer::start(
            &thread_name("shape", &shared.cfg.node_id),
            opts.timer,
            move |d, now| deliver_to.deliver(d, now),
        )?;
        *lock(&shared.timer) = Some(timer);
        let mut net = PeerNet {
            shared: Arc::clone(&shared),
            local_addr,
            acceptor: None,
        };
        let acc = Arc::clone(&shared);
        match spawn(thread_name("accept", &shared.cfg.node_id), move || {
            accept_loop(&acc, &listener)
        }) {
            Ok(h) => net.acceptor = Some(h),
            Err(e) => {
                net.shutdown();
                return Err(e);
            }
        }
        let mut dialed: Vec<PeerSpec> = shared
            .peers
            .values()
            .filter(|p| p.id > shared.cfg.node_id)
            .cloned()
            .collect();
        dialed.sort_by(|a, b| a.id.cmp(&b.id));
        for spec in dialed {
            let s = Arc::clone(&shared);
            let name = thread_name("dial", &spec.id);
            match spawn(name, move || dial_loop(&s, &spec)) {
                Ok(h) => lock(&shared.threads).push(h),
                Err(e) => {
                    net.shutdown();
                    return Err(e);
                }
            }
        }
        Ok((net, events_rx))
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

    /// Closes every connection and the listener and joins every thread. Messages still
    /// held by the shaping timer are dropped; no event follows.
    pub fn shutdown(self) {
        drop(self);
    }

    fn stop(&mut self) {
        let s = &self.shared;
        s.stopping.store(true, Relaxed);
        {
            let _g = lock(&s.nap.0);
            s.nap.1.notify_all();
        }
        for (_, link) in lock(&s.links).drain() {
            let _ = link.stream.shutdown(Shutdown::Both);
        }
        for stream in lock(&s.streams).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        if let Some(acceptor) = self.acceptor.take() {
            // The acceptor blocks in accept(): one connection wakes it to see the flag.
            let _ = TcpStream::connect_timeout(&wake_addr(self.local_addr), HANDSHAKE_TIMEOUT);
            let _ = acceptor.join();
        }
        // Handlers started before the flag may add threads while we join: loop until none.
        loop {
            let batch: Vec<JoinHandle<()>> = lock(&s.threads).drain(..).collect();
            if batch.is_empty() {
                break;
            }
            for h in batch {
                let _ = h.join();
            }
        }
        if let Some(timer) = lock(&s.timer).take() {
            timer.stop();
        }
    }
}

impl Drop for PeerNet {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Shared {
    /// The state of a network with no thread, link or timer yet.
    fn new(
        cfg: PeerConfig,
        opts: PeerOptions,
        peers: HashMap<String, PeerSpec>,
        events: Sender<PeerEvent>,
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
            handshakes: AtomicUsize::new(0),
            unlinked_since: Mutex::new(HashMap::new()),
            started: Instant::now(),
            nap: (Mutex::new(()), Condvar::new()),
            threads: Mutex::new(Vec::new()),
            timer: Mutex::new(None),
            faults: Mutex::new((HashMap::new(), Draws::new(unix_ns()))),
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
    fn take_inbound(&self, peer: &str, conn: u64, n: usize) -> bool {
        if self.inbound.pending(peer) > 0
            && self.inbound.pending(peer).saturating_add(n) > self.opts.max_inbound_bytes
        {
            self.traffic.inbound_paused.fetch_add(1, Relaxed);
        }
        self.inbound.take(peer, n, || {
            self.stopping.load(Relaxed)
                || !lock(&self.links)
                    .get(peer)
                    .is_some_and(|l| l.conn == conn && l.cut.is_none())
        })
    }

    fn emit(&self, e: PeerEvent) {
        // A node that dropped its receiver no longer wants events; that is not an error.
        let _ = self.events.send(e);
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
        } else if let Some(timer) = lock(&self.timer).as_ref() {
            timer.push(due, d);
        }
    }

    fn open_stream(&self, stream: &TcpStream) -> Option<u64> {
        let conn = self.next_conn.fetch_add(1, Relaxed);
        let clone = stream.try_clone().ok()?;
        lock(&self.streams).insert(conn, clone);
        if self.stopping.load(Relaxed) {
            // Registered after stop() swept the streams: nobody else will cut it.
            lock(&self.streams).remove(&conn);
            return None;
        }
        Some(conn)
    }

    fn close_stream(&self, conn: u64) {
        if let Some(s) = lock(&self.streams).remove(&conn) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Makes `stream` the link to `peer` (replacing an older one) and starts its writer.
    fn establish(self: &Arc<Self>, peer: &str, conn: u64, stream: &TcpStream) -> bool {
        let (Ok(reader_side), Ok(writer_side)) = (stream.try_clone(), stream.try_clone()) else {
            return false;
        };
        let (frames_tx, frames_rx) = mpsc::channel::<Vec<u8>>();
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
        let (me, unwritten) = (Arc::clone(self), Arc::clone(&queued));
        let writer = spawn(thread_name("write", peer), move || {
            me.write_loop(writer_side, frames_rx, &unwritten)
        });
        match writer {
            Ok(h) => {
                let mut threads = lock(&self.threads);
                threads.retain(|t| !t.is_finished());
                threads.push(h);
            }
            Err(_) => return false,
        }
        links.insert(
            peer.to_string(),
            Link {
                conn,
                stream: reader_side,
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

    fn write_loop(&self, stream: TcpStream, frames: Receiver<Vec<u8>>, queued: &AtomicUsize) {
        let mut out = BufWriter::with_capacity(64 * 1024, &stream);
        // Ends when the link is dropped from the map (sender gone) or a write fails.
        while let Ok(first) = frames.recv() {
            let mut batch = vec![first];
            batch.extend(frames.try_iter());
            for f in &batch {
                if out.write_all(f).is_err() {
                    let _ = stream.shutdown(Shutdown::Both);
                    return;
                }
            }
            if out.flush().is_err() {
                let _ = stream.shutdown(Shutdown::Both);
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
    fn read_link(&self, peer: &str, conn: u64, stream: &TcpStream, remote: SocketAddr) {
        let _ = stream.set_read_timeout(None);
        let mut input = BufReader::with_capacity(64 * 1024, stream);
        let mut last_due = 0u64;
        let shape = self
            .peers
            .get(peer)
            .map_or(LinkShape::UNSHAPED, |p| p.shape);
        let reason = loop {
            match frame::read_data(&mut input, self.cfg.max_frame) {
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
                    if !self.take_inbound(peer, conn, payload.len()) {
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

    /// Sleeps `d` unless shutdown starts; true when stopping.
    fn nap(&self, d: Duration) -> bool {
        let g = lock(&self.nap.0);
        if self.stopping.load(Relaxed) {
            return true;
        }
        let _ = self.nap.1.wait_timeout(g, d);
        self.stopping.load(Relaxed)
    }

    fn my_hello(&self) -> Hello {
        Hello {
            status: 0,
            genesis: self.cfg.genesis_hash,
            node_id: self.cfg.node_id.clone(),
        }
    }
}

fn dial_loop(s: &Arc<Shared>, spec: &PeerSpec) {
    let mut backoff = BACKOFF_FIRST;
    while !s.stopping.load(Relaxed) {
        if let Some(left) = s.banned_for(&spec.id) {
            if s.nap(left) {
                return;
            }
            continue;
        }
        if s.is_linked(&spec.id) {
            // The peer dialed us (it replaced a link we had, or runs another rule).
            if s.nap(LINKED_POLL) {
                return;
            }
            continue;
        }
        // Resolved again on each try: a name may not resolve yet (its pod is not
        // scheduled) or may point elsewhere after a restart.
        let linked = match connect_by_name(&spec.addr) {
            Some((stream, remote)) => dial_once(s, spec, stream, remote),
            None => false,
        };
        if linked {
            backoff = BACKOFF_FIRST;
        } else {
            if s.nap(backoff) {
                return;
            }
            backoff = (backoff * 2).min(BACKOFF_CAP);
        }
    }
}

/// Handshakes on a fresh connection and reads the link until it ends; true if it linked.
fn dial_once(s: &Arc<Shared>, spec: &PeerSpec, stream: TcpStream, remote: SocketAddr) -> bool {
    let Some(conn) = s.open_stream(&stream) else {
        return false;
    };
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
    let linked = match dial_handshake(s, &stream, spec) {
        Ok(()) => {
            let ok = s.establish(&spec.id, conn, &stream);
            if ok {
                s.read_link(&spec.id, conn, &stream, remote);
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
/// when the name does not resolve or nothing answers.
fn connect_by_name(addr: &str) -> Option<(TcpStream, SocketAddr)> {
    use std::net::ToSocketAddrs as _;
    addr.to_socket_addrs().ok()?.find_map(|a| {
        TcpStream::connect_timeout(&a, HANDSHAKE_TIMEOUT)
            .ok()
            .map(|s| (s, a))
    })
}

fn wake_addr(local: SocketAddr) -> SocketAddr {
    let mut a = local;
    if a.ip().is_unspecified() {
        a.set_ip(match a {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    a
}

fn thread_name(role: &str, who: &str) -> String {
    // Linux shows 15 bytes of a thread name: the role comes first so it survives.
    format!("net-{role}-{who}")
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, NetError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|source| NetError::Thread { name, source })
}
