//! How a bench's tiles are wired: every link and its metrics in the workspace (with
//! dyno-tango's [`LinkParts`], as the synthetic layout wires its link), each tile in its
//! stem, started on its CPU slot ([`pin_tile`]), and joined with what it ends with.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use dyno_tango::affinity::CpuSlot;
use dyno_tango::region::Region;
use dyno_tango::tile::{mark_failed, InLink, OutLink, Stem, Tile};
use dyno_tango::wiring::{pin_tile, LinkParts};
use dyno_tango::workspace::Workspace;
use dyno_tiles::tiles::{Bank, Benchg, Dedup, Pack, Poh, Shared, Store, Verify, MAX_ENV};

use crate::config::BenchConfig;
use crate::error::{Error, Result};

/// Raises every flag when dropped during a panic.
pub(super) struct StopOnUnwind<'a>(pub(super) &'a [&'a AtomicBool]);

impl Drop for StopOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for f in self.0 {
                f.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Marks the tile failed and raises `failed` if its thread unwinds.
struct FailGuard<'a> {
    failed: &'a AtomicBool,
    metrics: Region,
}

impl Drop for FailGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = mark_failed(&self.metrics);
            self.failed.store(true, Ordering::SeqCst);
        }
    }
}

pub(super) struct Ctl<'a> {
    pub(super) failed: &'a AtomicBool,
}

pub(super) fn spawn<'s, 'e: 's, T: Tile + 's>(
    s: &'s Scope<'s, 'e>,
    ctl: &'s Ctl<'e>,
    mut stem: Stem<T>,
    slot: CpuSlot,
    metrics: Region,
    stop: &'s AtomicBool,
    done: Option<&'s AtomicBool>,
) -> ScopedJoinHandle<'s, Result<Stem<T>>> {
    s.spawn(move || {
        let _guard = FailGuard {
            failed: ctl.failed,
            metrics: metrics.clone(),
        };
        if let Err(e) = pin_tile(slot, &metrics) {
            let _ = mark_failed(&metrics);
            ctl.failed.store(true, Ordering::SeqCst);
            return Err(e.into());
        }
        stem.run(stop);
        if let Some(d) = done {
            d.store(true, Ordering::SeqCst);
        }
        Ok(stem)
    })
}

pub(super) fn joined<T>(name: &str, h: ScopedJoinHandle<'_, Result<T>>) -> Result<T> {
    h.join().map_err(|_| {
        Error::Tango(dyno_tango::Error::Tile {
            tile: name.to_string(),
            reason: "panicked".into(),
        })
    })?
}

/// The tiles of one run, wired, ready to start (in affinity order).
pub(super) struct Stems {
    pub(super) benchg: Stem<Benchg>,
    pub(super) verify: Vec<Stem<Verify>>,
    pub(super) dedup: Stem<Dedup>,
    pub(super) pack: Stem<Pack>,
    pub(super) banks: Vec<Stem<Bank>>,
    pub(super) poh: Stem<Poh>,
    pub(super) store: Option<Stem<Store>>,
}

/// Every link of a run, each end with the tile that holds it.
struct Links {
    benchg_out: OutLink,
    verify_in: Vec<InLink>,
    verify_out: Vec<OutLink>,
    dedup_in: Vec<InLink>,
    dedup_out: OutLink,
    pack_in: InLink,
    pack_out: OutLink,
    bank_in: Vec<InLink>,
    bank_out: Vec<OutLink>,
    poh_in: Vec<InLink>,
    poh_out: Vec<OutLink>,
    store_in: Option<InLink>,
}

/// Creates every link in `ws`: transactions on links of the layout's depth, microblocks
/// and entries on shallower ones.
fn wire_links(cfg: &BenchConfig, ws: &mut Workspace) -> Result<Links> {
    let (nv, nb) = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let depth = cfg.layout.link_depth;
    let small = depth.min(256);
    let max_txs = cfg.pack.max_txs_per_microblock;
    let mut ingress = LinkParts::new(ws, "benchg->verify", depth, MAX_ENV)?;
    let mut verify_in = Vec::new();
    for i in 0..nv {
        verify_in.push(ingress.consumer(
            ws,
            &format!("verify:{i}"),
            cfg.layout.ingress_reliable,
        )?);
    }
    let mut dedup_in = Vec::new();
    let mut verify_out = Vec::new();
    for i in 0..nv {
        let mut l = LinkParts::new(ws, &format!("verify:{i}->dedup"), depth, MAX_ENV)?;
        dedup_in.push(l.consumer(ws, "dedup:0", true)?);
        verify_out.push(l.producer());
    }
    let mut l = LinkParts::new(ws, "dedup->pack", depth, MAX_ENV)?;
    let pack_in = l.consumer(ws, "pack:0", true)?;
    let dedup_out = l.producer();
    let mut l = LinkParts::new(ws, "pack->bank", small, Pack::mtu(max_txs))?;
    let mut bank_in = Vec::new();
    for i in 0..nb {
        bank_in.push(l.consumer(ws, &format!("bank:{i}"), true)?);
    }
    let pack_out = l.producer();
    let mut poh_in = Vec::new();
    let mut bank_out = Vec::new();
    for i in 0..nb {
        let mut l = LinkParts::new(ws, &format!("bank:{i}->poh"), small, Bank::mtu(max_txs))?;
        poh_in.push(l.consumer(ws, "poh:0", true)?);
        bank_out.push(l.producer());
    }
    let (poh_out, store_in) = if cfg.store.enabled {
        let mut l = LinkParts::new(ws, "poh->store", depth.min(1024), Poh::mtu(max_txs))?;
        let c = l.consumer(ws, "store:0", true)?;
        (vec![l.producer()], Some(c))
    } else {
        (Vec::new(), None)
    };
    Ok(Links {
        benchg_out: ingress.producer(),
        verify_in,
        verify_out,
        dedup_in,
        dedup_out,
        pack_in,
        pack_out,
        bank_in,
        bank_out,
        poh_in,
        poh_out,
        store_in,
    })
}

/// Creates every link in `ws` and wraps each tile in its stem; `tile_metrics` are in
/// affinity order.
#[allow(clippy::too_many_arguments)]
pub(super) fn build_stems(
    cfg: &BenchConfig,
    ws: &mut Workspace,
    tile_metrics: &[Region],
    benchg: Benchg,
    shared: &Arc<Shared>,
    start_hash: [u8; 32],
    ledger_file: Option<std::fs::File>,
    audit: bool,
) -> Result<Stems> {
    let (nv, nb) = (cfg.layout.verify_tile_count, cfg.layout.bank_tile_count);
    let links = wire_links(cfg, ws)?;
    let sopts = cfg.tango_layout().stem_options(cfg.layout.link_depth)?;
    let m = |i: usize| Some(tile_metrics[i].clone());
    let mut k = 0;
    let mut next = || {
        k += 1;
        k - 1
    };
    let benchg_stem = Stem::new(
        benchg,
        Vec::new(),
        vec![links.benchg_out],
        m(next()),
        sopts.clone(),
    );
    let verify_stems: Vec<_> = links
        .verify_in
        .into_iter()
        .zip(links.verify_out)
        .enumerate()
        .map(|(i, (inp, out))| {
            let v = Verify::new(i, nv, cfg.verify.batch, audit);
            Stem::new(v, vec![inp], vec![out], m(next()), sopts.clone())
        })
        .collect();
    let dedup_stem = Stem::new(
        Dedup::new(cfg.dedup.depth, audit),
        links.dedup_in,
        vec![links.dedup_out],
        m(next()),
        sopts.clone(),
    );
    let pack_stem = Stem::new(
        Pack::new(&cfg.pack, nb, shared.clone(), audit),
        vec![links.pack_in],
        vec![links.pack_out],
        m(next()),
        sopts.clone(),
    );
    let bank_stems: Vec<_> = links
        .bank_in
        .into_iter()
        .zip(links.bank_out)
        .enumerate()
        .map(|(i, (inp, out))| {
            Stem::new(
                Bank::new(i, shared.clone(), audit).with_extra_work(cfg.bank.extra_work_per_tx),
                vec![inp],
                vec![out],
                m(next()),
                sopts.clone(),
            )
        })
        .collect();
    let poh_stem = Stem::new(
        Poh::new(&cfg.poh, start_hash, shared.clone(), cfg.store.enabled),
        links.poh_in,
        links.poh_out,
        m(next()),
        sopts.clone(),
    );
    let store_stem = links.store_in.zip(ledger_file).map(|(inp, f)| {
        Stem::new(
            Store::new(f, shared.clone()),
            vec![inp],
            Vec::new(),
            m(next()),
            sopts.clone(),
        )
    });

    ws.mark_ready();
    Ok(Stems {
        benchg: benchg_stem,
        verify: verify_stems,
        dedup: dedup_stem,
        pack: pack_stem,
        banks: bank_stems,
        poh: poh_stem,
        store: store_stem,
    })
}

/// How a run is stopped: benchg first (`gen_stop`, then `gen_done` once it returned),
/// the other tiles after the drain (`inner`); `failed` when any tile failed.
#[derive(Default)]
pub(super) struct Flags {
    pub(super) failed: AtomicBool,
    pub(super) gen_stop: AtomicBool,
    pub(super) gen_done: AtomicBool,
    pub(super) inner: AtomicBool,
}

pub(super) type Handle<'s, T> = ScopedJoinHandle<'s, Result<Stem<T>>>;

/// The threads of a run's tiles, in affinity order.
pub(super) struct Running<'s> {
    benchg: Handle<'s, Benchg>,
    verify: Vec<Handle<'s, Verify>>,
    dedup: Handle<'s, Dedup>,
    pack: Handle<'s, Pack>,
    banks: Vec<Handle<'s, Bank>>,
    poh: Handle<'s, Poh>,
    store: Option<Handle<'s, Store>>,
}

/// Each tile's thread as it ended: its stem back, or why not.
pub(super) struct Finished {
    pub(super) benchg: Result<Stem<Benchg>>,
    pub(super) verify: Vec<Result<Stem<Verify>>>,
    pub(super) dedup: Result<Stem<Dedup>>,
    pub(super) pack: Result<Stem<Pack>>,
    pub(super) banks: Vec<Result<Stem<Bank>>>,
    pub(super) poh: Result<Stem<Poh>>,
    pub(super) store: Option<Result<Stem<Store>>>,
}

/// Starts every tile on its CPU slot (`slots` and `metrics` in affinity order).
pub(super) fn start_tiles<'s, 'e: 's>(
    s: &'s Scope<'s, 'e>,
    ctl: &'s Ctl<'e>,
    stems: Stems,
    slots: &[CpuSlot],
    metrics: &[Region],
    flags: &'e Flags,
) -> Running<'s> {
    let mut next = 0..;
    let mut place = || {
        let i = next.next().expect("unbounded");
        (slots[i], metrics[i].clone())
    };
    let inner = &flags.inner;
    let (slot, m) = place();
    let benchg = spawn(
        s,
        ctl,
        stems.benchg,
        slot,
        m,
        &flags.gen_stop,
        Some(&flags.gen_done),
    );
    macro_rules! start {
        ($stem:expr) => {{
            let (slot, m) = place();
            spawn(s, ctl, $stem, slot, m, inner, None)
        }};
    }
    Running {
        benchg,
        verify: stems.verify.into_iter().map(|st| start!(st)).collect(),
        dedup: start!(stems.dedup),
        pack: start!(stems.pack),
        banks: stems.banks.into_iter().map(|st| start!(st)).collect(),
        poh: start!(stems.poh),
        store: stems.store.map(|st| start!(st)),
    }
}

pub(super) fn joined_all<T: Tile>(kind: &str, hs: Vec<Handle<'_, T>>) -> Vec<Result<Stem<T>>> {
    hs.into_iter()
        .enumerate()
        .map(|(i, h)| joined(&format!("{kind}:{i}"), h))
        .collect()
}

impl Running<'_> {
    /// Waits for every tile's thread.
    pub(super) fn join(self) -> Finished {
        Finished {
            benchg: joined("benchg:0", self.benchg),
            verify: joined_all("verify", self.verify),
            dedup: joined("dedup:0", self.dedup),
            pack: joined("pack:0", self.pack),
            banks: joined_all("bank", self.banks),
            poh: joined("poh:0", self.poh),
            store: self.store.map(|h| joined("store:0", h)),
        }
    }
}
