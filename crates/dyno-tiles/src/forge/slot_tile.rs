//! The wrapper that makes a steady tile follow the forge's slots ([`SlotTile`]), the
//! handshake it renews through ([`Control`]), and the collector at the end of the
//! pipeline ([`Collect`]). See the parent module for why tiles are renewed per slot.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use dyno_tango::mcache::FragMeta;
use dyno_tango::tile::{FragOutcome, Outputs, Tile};

use crate::ledger::{EntryHeader, ENTRY_HEADER};
use crate::tiles::Shared;

/// What the renewed tiles build their next value from.
pub(super) struct Setup {
    pub(super) shared: Arc<Shared>,
    pub(super) poh_start: [u8; 32],
}

/// The forge's side of the renewal handshake.
pub(super) struct Control {
    /// Bumped for each slot; a wrapper that sees a new value renews its tile.
    pub(super) generation: AtomicU64,
    pub(super) setup: Mutex<Arc<Setup>>,
    /// Wrappers renewed to the current generation.
    pub(super) renewed: AtomicUsize,
    /// Poh hashes only while this is raised.
    pub(super) forging: AtomicBool,
    /// Raised when the threads are to stop (the stems' own flag is not ours to wait on).
    pub(super) stopping: AtomicBool,
    /// Where tiles sleep between slots; rung (under `bell`) after every change above.
    pub(super) bell: Mutex<()>,
    pub(super) ring: Condvar,
}

impl Control {
    /// Wakes every sleeping tile. Taking the lock orders the ring after the change the
    /// caller just stored, so a tile that checked its condition before the change is
    /// already waiting and hears it.
    pub(super) fn ring(&self) {
        let _held = self.bell.lock().unwrap_or_else(|p| p.into_inner());
        self.ring.notify_all();
    }
}

pub(super) type Make<T> = Box<dyn FnMut(&Setup) -> T + Send>;

/// The longest a tile sleeps between slots without being rung: a safety net only (every
/// change a tile waits for rings it), so a lost wake-up costs at most this.
pub const BETWEEN_SLOTS: Duration = Duration::from_millis(200);

/// A tile that follows the forge's slots: rebuilt on its own thread when a slot starts
/// (if it holds slot state: `make`), and dozing between slots.
pub(super) struct SlotTile<T> {
    inner: T,
    make: Option<Make<T>>,
    control: Arc<Control>,
    seen: u64,
    /// Works only while a slot is forged (poh: no hashing between slots).
    only_while_forging: bool,
    /// Dozes [`COLLECT_DOZE`] at a time instead of waiting to be rung: the collector,
    /// which must keep draining poh's link between slots (see [`COLLECT_DOZE`]).
    timed_doze: bool,
}

/// The collector's doze between slots. Poh may record a few ticks after a slot ends,
/// before it sees forging lowered; the collector passes them on while the forge waits
/// for the next slot, and the forge drops everything collected before that slot's
/// renewal. A collector asleep until the next slot would hand those stale ticks over
/// inside the next slot instead, and its block would fail its own PoH check.
pub(super) const COLLECT_DOZE: Duration = Duration::from_millis(2);

impl<T: Tile> SlotTile<T> {
    /// A tile rebuilt by `make` at every slot.
    pub(super) fn renewed(
        mut make: Make<T>,
        control: &Arc<Control>,
        only_while_forging: bool,
    ) -> Self {
        let setup = control
            .setup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        SlotTile {
            inner: make(&setup),
            make: Some(make),
            control: control.clone(),
            seen: control.generation.load(Ordering::Acquire),
            only_while_forging,
            timed_doze: false,
        }
    }

    /// A tile without slot state, kept as it is.
    pub(super) fn steady(inner: T, control: &Arc<Control>) -> Self {
        SlotTile {
            inner,
            make: None,
            control: control.clone(),
            seen: 0,
            only_while_forging: false,
            timed_doze: false,
        }
    }

    /// The collector: a steady tile that dozes on a timer (see [`COLLECT_DOZE`]).
    pub(super) fn collector(inner: T, control: &Arc<Control>) -> Self {
        SlotTile {
            timed_doze: true,
            ..SlotTile::steady(inner, control)
        }
    }

    /// Sleeps until the forge rings for something this tile must act on: forging, a
    /// new slot to renew for (tiles with slot state), or stop.
    fn doze(&self) {
        let c = &self.control;
        if self.timed_doze {
            std::thread::sleep(COLLECT_DOZE);
            return;
        }
        let idle = || {
            !c.forging.load(Ordering::Acquire)
                && !c.stopping.load(Ordering::Acquire)
                && (self.make.is_none() || c.generation.load(Ordering::Acquire) == self.seen)
        };
        let held = c.bell.lock().unwrap_or_else(|p| p.into_inner());
        let _ = c
            .ring
            .wait_timeout_while(held, BETWEEN_SLOTS, |_| idle())
            .unwrap_or_else(|p| p.into_inner());
    }

    fn renew(&mut self) {
        let Some(make) = self.make.as_mut() else {
            return;
        };
        let g = self.control.generation.load(Ordering::Acquire);
        if g == self.seen {
            return;
        }
        let setup = self
            .control
            .setup
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.inner = make(&setup);
        self.seen = g;
        self.control.renewed.fetch_add(1, Ordering::AcqRel);
    }
}

impl<T: Tile> Tile for SlotTile<T> {
    fn burst(&self) -> u64 {
        self.inner.burst()
    }

    fn after_credit(&mut self, out: &mut Outputs) -> bool {
        self.renew();
        if !self.control.forging.load(Ordering::Acquire) {
            self.doze();
            if self.only_while_forging {
                return false;
            }
        }
        self.inner.after_credit(out)
    }

    fn before_frag(&mut self, input: usize, meta: &FragMeta) -> bool {
        self.renew();
        self.inner.before_frag(input, meta)
    }

    fn after_frag(
        &mut self,
        input: usize,
        meta: &FragMeta,
        payload: &[u8],
        out: &mut Outputs,
    ) -> FragOutcome {
        self.inner.after_frag(input, meta, payload, out)
    }

    fn housekeeping(&mut self) {
        self.renew();
        self.inner.housekeeping();
    }
}

/// The last tile: hands each poh entry (header and records) to the forge.
pub(super) struct Collect {
    pub(super) entries: Sender<(EntryHeader, Vec<u8>)>,
}

impl Tile for Collect {
    fn after_frag(
        &mut self,
        _: usize,
        _: &FragMeta,
        payload: &[u8],
        _: &mut Outputs,
    ) -> FragOutcome {
        match EntryHeader::decode(payload) {
            Some(h) => {
                let _ = self.entries.send((h, payload[ENTRY_HEADER..].to_vec()));
                FragOutcome::Done
            }
            None => FragOutcome::Filtered,
        }
    }
}
