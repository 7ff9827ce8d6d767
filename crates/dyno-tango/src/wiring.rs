//! Wiring a layout in a workspace: a link's objects (mcache, dcache, link metrics), each
//! consumer's metrics and flow-control sequence, the producer end with them, and a tile's
//! thread pinned to its CPU with the CPU recorded in its metrics. The synthetic layout and
//! the pipeline bench wire their tiles with these, so both name and account links alike.

use std::sync::atomic::Ordering;

use crate::affinity::CpuSlot;
use crate::dcache::Dcache;
use crate::error::Result;
use crate::fseq::{Fseq, FSEQ_FOOTPRINT};
use crate::link::{Consumer, Producer};
use crate::mcache::Mcache;
use crate::metrics::{ConsumerMetrics, LinkMetrics, TileMetrics};
use crate::region::Region;
use crate::sys;
use crate::tile::{InLink, OutLink};
use crate::workspace::{ObjectKind, Workspace};

/// One link being wired: created in the workspace, given its consumers one by one, then
/// turned into its producer end.
pub struct LinkParts {
    name: String,
    mcache: Mcache,
    dcache: Dcache,
    metrics: Region,
    fseqs: Vec<Fseq>,
    slow: Vec<Option<Region>>,
}

impl LinkParts {
    /// Allocates and initialises link `name` in `ws`: `depth` frags of at most `mtu`
    /// bytes, with its shared metrics.
    pub fn new(ws: &mut Workspace, name: &str, depth: u64, mtu: usize) -> Result<LinkParts> {
        let m = ws.alloc(ObjectKind::Mcache, name, Mcache::footprint(depth))?;
        Mcache::new(&m, depth, 0)?;
        let d = ws.alloc(ObjectKind::Dcache, name, Dcache::footprint(mtu, depth))?;
        Dcache::new(&d, mtu, depth)?;
        let lm = ws.alloc(ObjectKind::LinkMetrics, name, LinkMetrics::FOOTPRINT)?;
        LinkMetrics::new(&lm)?;
        Ok(LinkParts {
            name: name.to_string(),
            mcache: Mcache::join(&m)?,
            dcache: Dcache::join(&d)?,
            metrics: lm,
            fseqs: Vec::new(),
            slow: Vec::new(),
        })
    }

    /// The input end of `tile` (objects named `LINK@TILE`): its metrics, and for a
    /// reliable consumer the flow-control sequence the producer waits on.
    pub fn consumer(&mut self, ws: &mut Workspace, tile: &str, reliable: bool) -> Result<InLink> {
        let edge = format!("{}@{tile}", self.name);
        let cm = ws.alloc(
            ObjectKind::ConsumerMetrics,
            &edge,
            ConsumerMetrics::FOOTPRINT,
        )?;
        ConsumerMetrics::new(&cm)?;
        let fseq = if reliable {
            let f = ws.alloc(ObjectKind::Fseq, &edge, FSEQ_FOOTPRINT)?;
            Fseq::new(&f, 0)?;
            let f = Fseq::join(&f)?;
            self.fseqs.push(f.clone());
            self.slow.push(Some(cm.clone()));
            Some(f)
        } else {
            None
        };
        Ok(InLink {
            consumer: Consumer::new(self.mcache.clone(), self.dcache.clone(), fseq),
            metrics: Some(cm),
        })
    }

    /// The output end, waiting on every reliable consumer given so far.
    pub fn producer(self) -> OutLink {
        OutLink {
            producer: Producer::new(self.mcache, self.dcache, self.fseqs),
            metrics: Some(self.metrics),
            slow: self.slow,
        }
    }
}

/// Pins the calling tile thread to `slot` and records its CPU in the tile's metrics
/// (`u64::MAX` for a floating tile).
pub fn pin_tile(slot: CpuSlot, metrics: &Region) -> Result<()> {
    let cpu = match slot {
        CpuSlot::Pinned(cpu) => {
            sys::pin_current_thread(cpu)?;
            cpu as u64
        }
        CpuSlot::Floating => u64::MAX,
    };
    TileMetrics::join(metrics)?
        .cpu
        .store(cpu, Ordering::Relaxed);
    Ok(())
}
