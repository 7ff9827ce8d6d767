//! Forging one slot with the leader pipeline's tiles: the entry point a node calls with
//! its mempool snapshot, over the same verify -> dedup -> pack -> bank(s) -> poh tiles
//! `pipeline bench` wires (benchg's place is taken by the caller, who feeds the
//! snapshot into the verify link).
//!
//! The tile threads are started once ([`TileForge::start`]) and live as long as the
//! forge; a slot is not a new pipeline. What must change between slots is the state the
//! tiles work on: the balances of the block being built on (the node may have adopted
//! other leaders' blocks since its last slot, or switched forks) and the PoH chain's
//! start (the parent's last entry). Dedup, pack, the banks and poh hold that state, so
//! each runs inside a `SlotTile` wrapper that builds a fresh tile value (no thread,
//! no link: only the struct) when the forge announces a new slot, on its own thread,
//! before any transaction of that slot reaches it. Verify holds no slot state and runs
//! as it is.
//!
//! Poh hashes only while a slot is being forged, and between slots every tile sleeps on
//! a condition variable until the forge rings it (a new slot, forging, or stop), so an
//! idle node's tiles cost no core at all: dozens of nodes can share a machine.
//! Entries come back in the order the poh tile recorded them, each with its hash count,
//! its hash, and per transaction the bank's status, so the caller can seal a block
//! whose PoH chain any follower recomputes by replaying it sequentially.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use dyno_tango::link::{HeapLink, Producer};
use dyno_tango::tile::{IdleStrategy, InLink, OutLink, Stem, StemOptions, Tile};

use crate::bank::{AccountStore, Genesis};
use crate::config::{PackConfig, PohConfig};
use crate::ledger::{hash_once, mix, EntryHeader, RECORD_LEN};
use crate::telemetry::Telemetry;
use crate::tiles::{Bank, Dedup, Pack, Poh, Shared, Verify, MAX_ENV};

/// How the forge's tiles are laid out.
#[derive(Debug, Clone)]
pub struct ForgeConfig {
    /// Verify tiles; 0: the caller feeds transactions whose signatures it checked
    /// already (a node's mempool admits none unchecked), straight into dedup, so the
    /// leader checks each signature once.
    pub verify_tiles: usize,
    /// Bank tiles.
    pub bank_tiles: usize,
    /// Depth of the transaction links (the pack->bank and bank->poh links are at most
    /// 256 deep, as in the bench).
    pub link_depth: u64,
    /// Signatures verify checks per batch.
    pub verify_batch: usize,
    /// Signatures dedup remembers (within one slot: the node's chain dedups across).
    pub dedup_depth: usize,
    /// Pack's limits.
    pub pack: PackConfig,
    /// The PoH tick: at most `hashes_per_tick` hashes between entries, paced to
    /// `tick_ns` per tick while a slot is forged.
    pub poh: PohConfig,
    /// What an idle tile does (between slots every tile is idle).
    pub idle: IdleStrategy,
}

impl ForgeConfig {
    /// The threads [`TileForge::start`] runs with this layout: one per tile (verify,
    /// dedup, pack, each bank, PoH, and the entry collector).
    pub fn threads(&self) -> usize {
        self.verify_tiles + self.bank_tiles.max(1) + 4
    }
}

impl Default for ForgeConfig {
    /// One verify and one bank tile (a node shares its machine with its peers and its
    /// load), 64 hashes per 1 ms tick, tiles sleeping 200 us when idle, doubling up to
    /// 1 ms (one tick) while they stay idle: wake-ups were most of a lightly loaded
    /// node's CPU, and backing off cuts them to about a quarter at 1 TPS (BENCHMARKS.md,
    /// "What backing off costs and saves").
    fn default() -> Self {
        ForgeConfig {
            verify_tiles: 1,
            bank_tiles: 1,
            link_depth: 4096,
            verify_batch: 1,
            dedup_depth: 1 << 16,
            pack: PackConfig {
                // The block's size is the node's limit; pack must not cut it by cost.
                block_cost_limit: u64::MAX,
                ..PackConfig::default()
            },
            poh: PohConfig {
                hashes_per_tick: 64,
                tick_ns: 1_000_000,
                // The forge ends the block, not the poh tile.
                ticks_per_slot: u64::MAX,
            },
            idle: IdleStrategy::Backoff {
                min_micros: 200,
                max_micros: 1_000,
            },
        }
    }
}

impl ForgeConfig {
    /// The default layout with `banks` bank tiles (at least one): what a node's
    /// `bank_tiles` sets. With several banks, pack releases a microblock's account locks
    /// only once poh has recorded it, so the entries' order is an order the banks
    /// executed in, and the block replays sequentially to the banks' state.
    pub fn with_banks(banks: usize) -> ForgeConfig {
        ForgeConfig {
            bank_tiles: banks.max(1),
            ..ForgeConfig::default()
        }
    }
}

/// Most transactions fed and not yet recorded: bounds the work left to finish once
/// feeding stops (a few milliseconds of the pipeline's throughput), since a slot's fed
/// transactions are all recorded before it returns.
pub const IN_FLIGHT: usize = 1024;

/// Why a slot could not be forged with the tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForgeError {
    /// A tile thread could not start or has stopped.
    #[error("tile forge: {0}")]
    Tiles(String),
    /// The tiles did not take the new slot's state in time.
    #[error("tile forge: the tiles did not take slot state in time")]
    NotRenewed,
    /// Transactions fed were still not recorded when the forge gave up (a tile dropped
    /// one, or the machine starved the tiles): their work may reach a later slot.
    #[error("tile forge: {recorded} of {fed} fed transactions recorded when it gave up")]
    Busy {
        /// Transactions fed.
        fed: usize,
        /// Transactions poh recorded.
        recorded: usize,
    },
    /// The poh tile recorded a transaction this slot was not given: work left over from
    /// an earlier slot the forge gave up on. The block cannot be sealed; the pipeline
    /// is renewed again at the next slot.
    #[error("tile forge: an earlier slot's transaction reached this slot's PoH")]
    Stale,
}

/// One PoH entry as the poh tile recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgedEntry {
    /// Hashes since the previous entry.
    pub num_hashes: u64,
    /// The chain's hash after this entry.
    pub hash: [u8; 32],
    /// The transactions mixed in, in record order (none: a tick).
    pub txs: Vec<Vec<u8>>,
    /// Per transaction: executed (true) or failed, as the bank found.
    pub executed: Vec<bool>,
}

/// A slot the tiles forged.
#[derive(Debug, Clone)]
pub struct ForgedSlot {
    /// Entries in the order the poh tile recorded them, from the given PoH start.
    pub entries: Vec<ForgedEntry>,
    /// Balances after the banks executed them (the tiles' state).
    pub balances: Vec<u64>,
    /// Transactions given that were not fed before `feed_until` (they are in no
    /// entry; every one fed is).
    pub unrecorded: usize,
}

/// The rest of a slot forged in steps, at [`TileForge::finish`].
#[derive(Debug, Clone)]
pub struct FinishedSlot {
    /// Entries not taken by [`TileForge::entries`] before the slot was finished.
    pub entries: Vec<ForgedEntry>,
    /// Balances after the banks executed the slot (the tiles' state).
    pub balances: Vec<u64>,
}

/// The slot being forged, between [`TileForge::begin`] and [`TileForge::finish`].
struct Open {
    shared: Arc<Shared>,
    /// Transactions fed, in feed order (the feed sequence is the index).
    txs: Vec<Vec<u8>>,
    by_sig: HashMap<[u8; 64], usize>,
    /// Transactions poh recorded so far.
    recorded: usize,
    poh_start: [u8; 32],
    /// An entry chaining from `poh_start` came: every later one is this slot's.
    chained: bool,
}

/// The leader pipeline's tiles, running, ready to forge slots.
pub struct TileForge {
    genesis: Arc<Genesis>,
    control: Arc<Control>,
    renewable: usize,
    feed: Producer,
    entries: Receiver<(EntryHeader, Vec<u8>)>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    buf: Vec<u8>,
    open: Option<Open>,
}

impl std::fmt::Debug for TileForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TileForge")
            .field("threads", &self.threads.len())
            .finish()
    }
}

fn out_link(l: &HeapLink) -> OutLink {
    OutLink {
        producer: l.producer(),
        metrics: None,
        slow: (0..l.fseqs.len()).map(|_| None).collect(),
    }
}

fn in_link(l: &HeapLink, i: usize) -> Result<InLink, ForgeError> {
    Ok(InLink {
        consumer: l
            .reliable_consumer(i)
            .map_err(|e| ForgeError::Tiles(e.to_string()))?,
        metrics: None,
    })
}

fn heap(depth: u64, mtu: usize, consumers: usize) -> Result<HeapLink, ForgeError> {
    HeapLink::new(depth, mtu, 0, consumers).map_err(|e| ForgeError::Tiles(e.to_string()))
}

/// A shared state whose store holds `balances`.
fn shared_at(g: &Genesis, balances: &[u64], banks: usize) -> Option<Arc<Shared>> {
    Some(Arc::new(Shared {
        epoch: Instant::now(),
        store: AccountStore::restore(g, balances)?,
        landed: AtomicU64::new(0),
        slot: AtomicU64::new(0),
        bank_done: (0..banks).map(|_| AtomicU64::new(0)).collect(),
        record_order: banks > 1,
        pack_held: AtomicU64::new(0),
        telemetry: Telemetry::default(),
    }))
}

/// The heap links between the forge's tiles.
struct ForgeLinks {
    feed: HeapLink,
    verify_out: Vec<HeapLink>,
    dedup_out: HeapLink,
    pack_out: HeapLink,
    bank_out: Vec<HeapLink>,
    poh_out: HeapLink,
}

impl ForgeLinks {
    /// Links for `nv` verify and `nb` bank tiles: transactions at the configured depth,
    /// microblocks on links at most 256 deep.
    fn new(cfg: &ForgeConfig, nv: usize, nb: usize) -> Result<ForgeLinks, ForgeError> {
        let depth = cfg.link_depth;
        let small = depth.min(256);
        let max_txs = cfg.pack.max_txs_per_microblock;
        Ok(ForgeLinks {
            feed: heap(depth, MAX_ENV, nv.max(1))?,
            verify_out: (0..nv)
                .map(|_| heap(depth, MAX_ENV, 1))
                .collect::<Result<_, _>>()?,
            dedup_out: heap(depth, MAX_ENV, 1)?,
            pack_out: heap(small, Pack::mtu(max_txs), nb)?,
            bank_out: (0..nb)
                .map(|_| heap(small, Bank::mtu(max_txs), 1))
                .collect::<Result<_, _>>()?,
            poh_out: heap(depth, Poh::mtu(max_txs), 1)?,
        })
    }
}

/// The forge's control block at `genesis`, no slot announced yet.
fn control_at(genesis: &Genesis, banks: usize) -> Arc<Control> {
    Arc::new(Control {
        generation: AtomicU64::new(0),
        setup: Mutex::new(Arc::new(Setup {
            shared: Arc::new(Shared::new(genesis, banks)),
            poh_start: [0; 32],
        })),
        renewed: AtomicUsize::new(0),
        forging: AtomicBool::new(false),
        stopping: AtomicBool::new(false),
        bell: Mutex::new(()),
        ring: Condvar::new(),
    })
}

impl TileForge {
    /// Wires the tiles on heap links and starts one thread per tile, at `genesis`'s
    /// state; they idle until [`TileForge::forge`] feeds them.
    pub fn start(cfg: &ForgeConfig, genesis: Arc<Genesis>) -> Result<TileForge, ForgeError> {
        let nb = cfg.bank_tiles.max(1);
        let control = control_at(&genesis, nb);
        let links = ForgeLinks::new(cfg, cfg.verify_tiles, nb)?;
        let sopts = StemOptions {
            idle: cfg.idle,
            lazy_ns: StemOptions::lazy_for_depth(cfg.link_depth),
            // On: the stem reads the clock every iteration and so sees a stop at once;
            // off, it looks only every 64 iterations (a dozing tile is rung at a stop).
            accounting: true,
        };
        let mut forge = TileForge {
            genesis,
            control: control.clone(),
            renewable: 3 + nb,
            feed: links.feed.producer(),
            entries: channel().1,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            buf: Vec::with_capacity(MAX_ENV),
            open: None,
        };
        forge.start_ingress(cfg, &links, &control, &sopts)?;
        forge.start_execution(cfg, &links, &control, &sopts)?;
        forge.start_recording(cfg, &links, &control, sopts)?;
        Ok(forge)
    }

    /// Verify (none when the caller checked the signatures) and dedup.
    fn start_ingress(
        &mut self,
        cfg: &ForgeConfig,
        links: &ForgeLinks,
        control: &Arc<Control>,
        sopts: &StemOptions,
    ) -> Result<(), ForgeError> {
        let nv = cfg.verify_tiles;
        for (i, out) in links.verify_out.iter().enumerate() {
            let v = SlotTile::steady(Verify::new(i, nv, cfg.verify_batch, false), control);
            let stem = Stem::new(
                v,
                vec![in_link(&links.feed, i)?],
                vec![out_link(out)],
                None,
                sopts.clone(),
            );
            self.spawn(&format!("forge-verify{i}"), stem)?;
        }
        let dd = cfg.dedup_depth;
        let dedup = SlotTile::renewed(
            Box::new(move |_: &Setup| Dedup::new(dd, false)),
            control,
            false,
        );
        let ins = if nv == 0 {
            // Verify's output is its input envelope unchanged: dedup takes the feed's.
            vec![in_link(&links.feed, 0)?]
        } else {
            (0..nv)
                .map(|i| in_link(&links.verify_out[i], 0))
                .collect::<Result<_, _>>()?
        };
        self.spawn(
            "forge-dedup",
            Stem::new(
                dedup,
                ins,
                vec![out_link(&links.dedup_out)],
                None,
                sopts.clone(),
            ),
        )
    }

    /// Pack and the banks, renewed at each slot on the balances it builds on.
    fn start_execution(
        &mut self,
        cfg: &ForgeConfig,
        links: &ForgeLinks,
        control: &Arc<Control>,
        sopts: &StemOptions,
    ) -> Result<(), ForgeError> {
        let nb = links.bank_out.len();
        let pcfg = cfg.pack.clone();
        let pack = SlotTile::renewed(
            Box::new(move |s: &Setup| Pack::new(&pcfg, nb, s.shared.clone(), false)),
            control,
            false,
        );
        self.spawn(
            "forge-pack",
            Stem::new(
                pack,
                vec![in_link(&links.dedup_out, 0)?],
                vec![out_link(&links.pack_out)],
                None,
                sopts.clone(),
            ),
        )?;
        for (i, out) in links.bank_out.iter().enumerate() {
            let bank = SlotTile::renewed(
                Box::new(move |s: &Setup| Bank::new(i, s.shared.clone(), false)),
                control,
                false,
            );
            let stem = Stem::new(
                bank,
                vec![in_link(&links.pack_out, i)?],
                vec![out_link(out)],
                None,
                sopts.clone(),
            );
            self.spawn(&format!("forge-bank{i}"), stem)?;
        }
        Ok(())
    }

    /// PoH, renewed at each slot on its parent's last hash, and the collector that hands
    /// its entries to [`TileForge::entries`].
    fn start_recording(
        &mut self,
        cfg: &ForgeConfig,
        links: &ForgeLinks,
        control: &Arc<Control>,
        sopts: StemOptions,
    ) -> Result<(), ForgeError> {
        let pohcfg = cfg.poh.clone();
        let poh = SlotTile::renewed(
            Box::new(move |s: &Setup| Poh::new(&pohcfg, s.poh_start, s.shared.clone(), true)),
            control,
            true,
        );
        let ins = links
            .bank_out
            .iter()
            .map(|l| in_link(l, 0))
            .collect::<Result<_, _>>()?;
        self.spawn(
            "forge-poh",
            Stem::new(
                poh,
                ins,
                vec![out_link(&links.poh_out)],
                None,
                sopts.clone(),
            ),
        )?;
        let (tx, rx) = channel();
        self.entries = rx;
        self.spawn(
            "forge-collect",
            Stem::new(
                SlotTile::collector(Collect { entries: tx }, control),
                vec![in_link(&links.poh_out, 0)?],
                Vec::new(),
                None,
                sopts,
            ),
        )
    }

    fn spawn<T: Tile + 'static>(
        &mut self,
        name: &str,
        mut stem: Stem<T>,
    ) -> Result<(), ForgeError> {
        let stop = self.stop.clone();
        let h = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || stem.run(&stop))
            .map_err(|e| {
                self.stop.store(true, Ordering::SeqCst);
                ForgeError::Tiles(format!("{name}: {e}"))
            })?;
        self.threads.push(h);
        Ok(())
    }

    /// Forges one slot: the tiles take `balances` and `poh_start` as their state, the
    /// `txs` go through verify, dedup, pack, the banks and poh, and the entries poh
    /// recorded come back in its order. Transactions are fed until all are or
    /// `feed_until` passes (the rest are `unrecorded`, in no entry), and every one fed
    /// is recorded before this returns; past `give_up` it is an error. The whole slot
    /// at once; [`TileForge::begin`], [`TileForge::feed`], [`TileForge::entries`] and
    /// [`TileForge::finish`] are the same slot in steps, for a caller that has other
    /// work between them.
    pub fn forge(
        &mut self,
        balances: &[u64],
        poh_start: [u8; 32],
        txs: &[Vec<u8>],
        feed_until: Instant,
        give_up: Instant,
    ) -> Result<ForgedSlot, ForgeError> {
        self.begin(balances, poh_start, give_up)?;
        let mut entries = Vec::new();
        let mut fed = 0;
        loop {
            while fed < txs.len() && Instant::now() < feed_until && self.feed(&txs[fed]) {
                fed += 1;
            }
            let now = Instant::now();
            if fed == txs.len() || now >= feed_until {
                break;
            }
            if now >= give_up {
                let recorded = self.open.as_ref().map_or(0, |o| o.recorded);
                self.close();
                return Err(ForgeError::Busy { fed, recorded });
            }
            entries.extend(self.entries(Duration::from_micros(500).min(give_up - now))?);
        }
        let done = self.finish(give_up)?;
        entries.extend(done.entries);
        Ok(ForgedSlot {
            entries,
            balances: done.balances,
            unrecorded: txs.len() - fed,
        })
    }

    /// Opens a slot: the tiles take `balances` and `poh_start` as their state and poh
    /// starts hashing; an error when they have not all taken it by `give_up`.
    pub fn begin(
        &mut self,
        balances: &[u64],
        poh_start: [u8; 32],
        give_up: Instant,
    ) -> Result<(), ForgeError> {
        self.close();
        if self.threads.iter().any(|t| t.is_finished()) {
            return Err(ForgeError::Tiles("a tile thread stopped".into()));
        }
        let nb = self.renewable - 3;
        let shared = shared_at(&self.genesis, balances, nb)
            .ok_or_else(|| ForgeError::Tiles("balances of another genesis".into()))?;
        *self.control.setup.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(Setup {
            shared: shared.clone(),
            poh_start,
        });
        self.control.renewed.store(0, Ordering::SeqCst);
        self.control.generation.fetch_add(1, Ordering::SeqCst);
        self.control.ring();
        while self.control.renewed.load(Ordering::Acquire) < self.renewable {
            if Instant::now() >= give_up {
                return Err(ForgeError::NotRenewed);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        // Anything recorded before the renewal belongs to no slot. Poh may have
        // recorded a few ticks after the last slot's end, before it saw forging
        // lowered, and the collector passes them on within its doze: they are dropped
        // here until the collector has been quiet for two dozes. (Ticks after a block's
        // last entry chain from its end, which is this slot's start when the node
        // builds on its own block: the PoH check in `entry` could not tell them apart.)
        let quiet = 2 * COLLECT_DOZE + Duration::from_millis(1);
        while self.entries.recv_timeout(quiet).is_ok() {
            if Instant::now() >= give_up {
                return Err(ForgeError::NotRenewed);
            }
        }
        self.open = Some(Open {
            poh_start,
            chained: false,
            shared,
            txs: Vec::new(),
            by_sig: HashMap::new(),
            recorded: 0,
        });
        self.control.forging.store(true, Ordering::SeqCst);
        self.control.ring();
        Ok(())
    }

    /// Feeds one transaction into the open slot; false when there is no room now (at
    /// most [`IN_FLIGHT`] fed and not yet recorded, or the verify link is full: take
    /// [`TileForge::entries`] and try again) or no slot is open. A transaction fed is
    /// in an entry by [`TileForge::finish`].
    pub fn feed(&mut self, tx: &[u8]) -> bool {
        let Some(open) = self.open.as_mut() else {
            return false;
        };
        let fed = open.txs.len();
        let Some(sig) = tx.get(..64) else {
            return false;
        };
        if fed - open.recorded >= IN_FLIGHT {
            return false;
        }
        self.buf.clear();
        self.buf.extend_from_slice(&(fed as u64).to_le_bytes());
        self.buf.extend_from_slice(&0u64.to_le_bytes());
        self.buf.extend_from_slice(tx);
        if self
            .feed
            .try_publish(fed as u64, &self.buf, 0, 0, 0)
            .is_err()
        {
            return false;
        }
        open.by_sig.insert(sig.try_into().expect("64 bytes"), fed);
        open.txs.push(tx.to_vec());
        true
    }

    /// Transactions fed into the open slot so far.
    pub fn fed(&self) -> usize {
        self.open.as_ref().map_or(0, |o| o.txs.len())
    }

    /// The entries poh recorded since the last call, in its order, waiting up to
    /// `wait` for the first (an empty list: none yet, or no slot open). On an error
    /// the slot is closed.
    pub fn entries(&mut self, wait: Duration) -> Result<Vec<ForgedEntry>, ForgeError> {
        if self.open.is_none() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let mut next = self.entries.recv_timeout(wait);
        loop {
            match next {
                Ok((h, records)) => match self.entry(h, &records) {
                    Ok(e) => out.extend(e),
                    Err(e) => {
                        self.close();
                        return Err(e);
                    }
                },
                Err(RecvTimeoutError::Timeout) => return Ok(out),
                Err(RecvTimeoutError::Disconnected) => {
                    self.close();
                    return Err(ForgeError::Tiles("the collect tile stopped".into()));
                }
            }
            next = match self.entries.try_recv() {
                Ok(v) => Ok(v),
                Err(TryRecvError::Empty) => Err(RecvTimeoutError::Timeout),
                Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            };
        }
    }

    /// Closes the open slot: waits until every transaction fed is recorded (so no
    /// work of this slot is left in the tiles for the next), stops poh, and returns
    /// the entries not yet taken and the balances after the slot; an error past
    /// `give_up` or when no slot is open.
    pub fn finish(&mut self, give_up: Instant) -> Result<FinishedSlot, ForgeError> {
        let mut entries = Vec::new();
        loop {
            let Some(open) = self.open.as_ref() else {
                return Err(ForgeError::Tiles("no slot open".into()));
            };
            let (fed, recorded) = (open.txs.len(), open.recorded);
            if recorded == fed {
                break;
            }
            let now = Instant::now();
            if now >= give_up {
                self.close();
                return Err(ForgeError::Busy { fed, recorded });
            }
            entries.extend(self.entries(Duration::from_micros(500).min(give_up - now))?);
        }
        let open = self.open.take().expect("checked above");
        self.control.forging.store(false, Ordering::SeqCst);
        Ok(FinishedSlot {
            entries,
            balances: open.shared.store.balances(),
        })
    }

    /// Abandons the open slot, if any: poh stops; what the tiles still hold is
    /// dropped at the next [`TileForge::begin`] (or refused there as stale).
    pub fn close(&mut self) {
        if self.open.take().is_some() {
            self.control.forging.store(false, Ordering::SeqCst);
        }
    }

    /// The entry poh recorded, or none for one recorded before this slot started.
    /// Those can only come before the slot's first entry (poh was renewed before it
    /// hashed anything of this slot, and the links keep order), so until one entry
    /// chains from the slot's PoH start, an entry that does not is dropped; after, the
    /// order is trusted.
    fn entry(&mut self, h: EntryHeader, records: &[u8]) -> Result<Option<ForgedEntry>, ForgeError> {
        let open = self.open.as_mut().ok_or(ForgeError::Stale)?;
        if !open.chained {
            let mut x = open.poh_start;
            for _ in 0..h.num_hashes {
                x = hash_once(&x);
            }
            if h.count > 0 {
                let n = (h.count as usize * RECORD_LEN).min(records.len());
                x = mix(&x, &Sha256::digest(&records[..n]).into());
            }
            if x != h.hash {
                return Ok(None);
            }
            open.chained = true;
        }
        let mut e = ForgedEntry {
            num_hashes: h.num_hashes,
            hash: h.hash,
            txs: Vec::new(),
            executed: Vec::new(),
        };
        for r in records.chunks_exact(RECORD_LEN).take(h.count as usize) {
            let sig: [u8; 64] = r[..64].try_into().expect("64 bytes");
            let &i = open.by_sig.get(&sig).ok_or(ForgeError::Stale)?;
            e.txs.push(open.txs[i].clone());
            e.executed.push(r[64] == 0);
        }
        open.recorded += e.txs.len();
        Ok(Some(e))
    }

    /// Stops and joins every tile thread.
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.control.stopping.store(true, Ordering::SeqCst);
        self.control.ring();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for TileForge {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

mod slot_tile;
pub use slot_tile::BETWEEN_SLOTS;
use slot_tile::{Collect, Control, Setup, SlotTile, COLLECT_DOZE};

#[cfg(test)]
mod tests;
