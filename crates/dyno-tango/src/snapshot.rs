//! A point-in-time readout of a workspace's metrics, for the monitor and /metrics.
//!
//! [`Snapshot::read`] works on a workspace attached read-only from another process.
//! Counters are cumulative; [`Snapshot::delta`] gives the change since a previous
//! snapshot ("since the last refresh"), keeping gauges as they are now.

use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::clock::wallclock_ns;
use crate::link::{ConsumerCounters, ProducerCounters};
use crate::metrics::{Bucket, ConsumerMetrics, LinkMetrics, TileMetrics, TileState, BUCKETS};
use crate::workspace::{ObjectKind, Workspace};

/// Loop time per bucket, in ns (stable JSON names, see [`Bucket::name`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TimeSplit {
    /// Housekeeping.
    pub hkeep: u64,
    /// Backpressured.
    pub backp: u64,
    /// Caught up (waiting).
    pub wait: u64,
    /// Overrun while polling.
    pub ovrnp: u64,
    /// Overrun while reading.
    pub ovrnr: u64,
    /// Filtered before reading.
    pub filt1: u64,
    /// Filtered after reading.
    pub filt2: u64,
    /// Doing work.
    pub finish: u64,
}

impl TimeSplit {
    /// From per-bucket values in [`Bucket`] order.
    pub fn from_array(a: [u64; BUCKETS]) -> TimeSplit {
        TimeSplit {
            hkeep: a[0],
            backp: a[1],
            wait: a[2],
            ovrnp: a[3],
            ovrnr: a[4],
            filt1: a[5],
            filt2: a[6],
            finish: a[7],
        }
    }

    /// Values in [`Bucket`] order.
    pub fn to_array(&self) -> [u64; BUCKETS] {
        [
            self.hkeep,
            self.backp,
            self.wait,
            self.ovrnp,
            self.ovrnr,
            self.filt1,
            self.filt2,
            self.finish,
        ]
    }

    /// Time in one bucket.
    pub fn get(&self, b: Bucket) -> u64 {
        self.to_array()[b as usize]
    }

    /// Total loop time.
    pub fn total(&self) -> u64 {
        self.to_array().iter().sum()
    }

    /// Share of each bucket in [0, 1], in [`Bucket`] order; they sum to 1 (all 0 when no
    /// time was recorded).
    pub fn shares(&self) -> [f64; BUCKETS] {
        let total = self.total();
        let mut out = [0.0; BUCKETS];
        if total > 0 {
            for (o, v) in out.iter_mut().zip(self.to_array()) {
                *o = v as f64 / total as f64;
            }
        }
        out
    }

    fn minus(&self, prev: &TimeSplit) -> TimeSplit {
        let (a, b) = (self.to_array(), prev.to_array());
        TimeSplit::from_array(std::array::from_fn(|i| a[i].saturating_sub(b[i])))
    }
}

/// One tile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TileSnapshot {
    /// `kind:index`.
    pub name: String,
    /// Process id.
    pub pid: u64,
    /// Thread id.
    pub tid: u64,
    /// Pinned CPU (none when floating).
    pub cpu: Option<u64>,
    /// Wall-clock ns of the last heartbeat.
    pub heartbeat_ns: u64,
    /// `boot`, `run`, `halt` or `fail`, as the tile last wrote it.
    pub state: String,
    /// Whether the tile's thread still runs: a tile of a run killed outright keeps the
    /// state it last wrote (`run`), so the state alone does not tell.
    pub alive: bool,
    /// Backpressured right now.
    pub in_backpressure: bool,
    /// Times it entered backpressure.
    pub backpressure_count: u64,
    /// Voluntary context switches.
    pub ctx_voluntary: u64,
    /// Involuntary context switches.
    pub ctx_involuntary: u64,
    /// Loop iterations.
    pub loops: u64,
    /// Loop time per bucket.
    pub time_ns: TimeSplit,
}

/// Whether thread `tid` of process `pid` runs (a tile that never started has tid 0).
fn thread_runs(pid: u64, tid: u64) -> bool {
    if cfg!(miri) {
        return true; // Miri's isolation forbids reading /proc.
    }
    tid != 0 && std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
}

impl TileSnapshot {
    /// Nanoseconds between the tile's last heartbeat and `now_ns` (a monitor flags a
    /// tile whose heartbeat is older than about 100 ms as stale).
    pub fn heartbeat_age_ns(&self, now_ns: u64) -> u64 {
        now_ns.saturating_sub(self.heartbeat_ns)
    }
}

/// One link (producer side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkSnapshot {
    /// `from->to`.
    pub name: String,
    /// Frags and bytes published.
    #[serde(flatten)]
    pub counters: ProducerCounters,
    /// Producer's next sequence number.
    pub tx_seq: u64,
    /// Ring depth.
    pub depth: u64,
    /// Largest payload.
    pub mtu: u64,
}

/// One consumer of a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerSnapshot {
    /// The link, `from->to`.
    pub link: String,
    /// The consuming tile.
    pub tile: String,
    /// Reliable (backpressures) or not (may be overrun).
    pub reliable: bool,
    /// Frags and bytes read, filtered and lost.
    #[serde(flatten)]
    pub counters: ConsumerCounters,
    /// Times it was the slowest consumer of a backpressured producer.
    pub slow: u64,
    /// Consumer's next sequence number.
    pub rx_seq: u64,
}

/// Every metric of a workspace at one instant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Workspace file.
    pub workspace: String,
    /// Creator pid.
    pub pid: u32,
    /// Whether the creator still runs (false: the run was killed or crashed, and what the
    /// snapshot shows is what it left).
    pub creator_alive: bool,
    /// Run generation.
    pub generation: u64,
    /// Wall-clock ns when taken.
    pub taken_ns: u64,
    /// For a delta: wall-clock ns of the earlier snapshot.
    pub since_ns: Option<u64>,
    /// Tiles, in creation order.
    pub tiles: Vec<TileSnapshot>,
    /// Links.
    pub links: Vec<LinkSnapshot>,
    /// Consumers.
    pub consumers: Vec<ConsumerSnapshot>,
}

impl Snapshot {
    /// Reads every metrics object of `ws` (objects not yet formatted are skipped).
    pub fn read(ws: &Workspace) -> Snapshot {
        let info = ws.info();
        let mut s = Snapshot {
            workspace: ws.path().display().to_string(),
            pid: info.pid,
            creator_alive: ws.creator_alive(),
            generation: info.generation,
            taken_ns: wallclock_ns(),
            since_ns: None,
            tiles: Vec::new(),
            links: Vec::new(),
            consumers: Vec::new(),
        };
        for o in ws.objects() {
            let Ok(region) = ws.find(o.kind, &o.name) else {
                continue;
            };
            let ld = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
            match o.kind {
                ObjectKind::TileMetrics => {
                    let Ok(m) = TileMetrics::join(&region) else {
                        continue;
                    };
                    let cpu = ld(&m.cpu);
                    let (pid, tid) = (ld(&m.pid), ld(&m.tid));
                    s.tiles.push(TileSnapshot {
                        name: o.name,
                        pid,
                        tid,
                        alive: s.creator_alive && thread_runs(pid, tid),
                        cpu: (cpu != u64::MAX).then_some(cpu),
                        heartbeat_ns: ld(&m.heartbeat_ns),
                        state: TileState::from_word(ld(&m.state)).name().to_string(),
                        in_backpressure: ld(&m.in_backp) != 0,
                        backpressure_count: ld(&m.backp_cnt),
                        ctx_voluntary: ld(&m.ctx_vol),
                        ctx_involuntary: ld(&m.ctx_invol),
                        loops: ld(&m.loops),
                        time_ns: TimeSplit::from_array(std::array::from_fn(|i| ld(&m.time_ns[i]))),
                    });
                }
                ObjectKind::LinkMetrics => {
                    let Ok(m) = LinkMetrics::join(&region) else {
                        continue;
                    };
                    s.links.push(LinkSnapshot {
                        name: o.name,
                        counters: m.counters(),
                        tx_seq: ld(&m.tx_seq),
                        depth: ld(&m.depth),
                        mtu: ld(&m.mtu),
                    });
                }
                ObjectKind::ConsumerMetrics => {
                    let Ok(m) = ConsumerMetrics::join(&region) else {
                        continue;
                    };
                    let (link, tile) = o.name.split_once('@').unwrap_or((&o.name, ""));
                    s.consumers.push(ConsumerSnapshot {
                        link: link.to_string(),
                        tile: tile.to_string(),
                        reliable: ld(&m.reliable) != 0,
                        counters: m.counters(),
                        slow: ld(&m.slow),
                        rx_seq: ld(&m.rx_seq),
                    });
                }
                _ => {}
            }
        }
        s
    }

    /// The change since `prev`: counters are differences (objects new since `prev`
    /// count from zero), gauges are the current values, `since_ns` is `prev.taken_ns`.
    pub fn delta(&self, prev: &Snapshot) -> Snapshot {
        let d = |a: u64, b: Option<u64>| a.saturating_sub(b.unwrap_or(0));
        let tiles = self
            .tiles
            .iter()
            .map(|t| {
                let p = prev.tiles.iter().find(|p| p.name == t.name);
                TileSnapshot {
                    backpressure_count: d(t.backpressure_count, p.map(|p| p.backpressure_count)),
                    ctx_voluntary: d(t.ctx_voluntary, p.map(|p| p.ctx_voluntary)),
                    ctx_involuntary: d(t.ctx_involuntary, p.map(|p| p.ctx_involuntary)),
                    loops: d(t.loops, p.map(|p| p.loops)),
                    time_ns: p.map_or(t.time_ns, |p| t.time_ns.minus(&p.time_ns)),
                    ..t.clone()
                }
            })
            .collect();
        let links = self
            .links
            .iter()
            .map(|l| {
                let p = prev.links.iter().find(|p| p.name == l.name);
                LinkSnapshot {
                    counters: l.counters.since(p.map(|p| &p.counters)),
                    ..l.clone()
                }
            })
            .collect();
        let consumers = self
            .consumers
            .iter()
            .map(|c| {
                let p = prev
                    .consumers
                    .iter()
                    .find(|p| p.link == c.link && p.tile == c.tile);
                ConsumerSnapshot {
                    counters: c.counters.since(p.map(|p| &p.counters)),
                    slow: d(c.slow, p.map(|p| p.slow)),
                    ..c.clone()
                }
            })
            .collect();
        Snapshot {
            since_ns: Some(prev.taken_ns),
            tiles,
            links,
            consumers,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::TileMetrics;

    #[test]
    fn link_and_consumer_json_keeps_the_counters_flat() {
        // The counters are one type (link.rs) inside the snapshot; the JSON the monitor,
        // stored runs and scrapers read still has them beside the other fields.
        let link = LinkSnapshot {
            name: "a->b".into(),
            counters: ProducerCounters {
                frags: 3,
                bytes: 96,
            },
            tx_seq: 3,
            depth: 16,
            mtu: 64,
        };
        assert_eq!(
            serde_json::to_string(&link).unwrap(),
            r#"{"name":"a->b","frags":3,"bytes":96,"tx_seq":3,"depth":16,"mtu":64}"#
        );
        let consumer = ConsumerSnapshot {
            link: "a->b".into(),
            tile: "sink:0".into(),
            reliable: true,
            counters: ConsumerCounters {
                frags: 1,
                bytes: 2,
                filt1: 3,
                filt2: 4,
                ovrnp: 5,
                ovrnr: 6,
            },
            slow: 7,
            rx_seq: 8,
        };
        assert_eq!(
            serde_json::to_string(&consumer).unwrap(),
            r#"{"link":"a->b","tile":"sink:0","reliable":true,"frags":1,"bytes":2,"filt1":3,"filt2":4,"ovrnp":5,"ovrnr":6,"slow":7,"rx_seq":8}"#
        );
    }

    #[test]
    fn delta_subtracts_counters_and_keeps_gauges() {
        let tile = |loops, hb, finish| TileSnapshot {
            name: "sink:0".into(),
            pid: 1,
            tid: 2,
            cpu: None,
            heartbeat_ns: hb,
            state: "run".into(),
            alive: true,
            in_backpressure: false,
            backpressure_count: loops / 10,
            ctx_voluntary: 0,
            ctx_involuntary: 0,
            loops,
            time_ns: TimeSplit {
                finish,
                wait: 100,
                ..TimeSplit::default()
            },
        };
        let consumer = |frags, rx_seq| ConsumerSnapshot {
            link: "a->b".into(),
            tile: "sink:0".into(),
            reliable: true,
            counters: ConsumerCounters {
                frags,
                bytes: frags * 64,
                filt1: 0,
                filt2: 0,
                ovrnp: 0,
                ovrnr: 0,
            },
            slow: 0,
            rx_seq,
        };
        let snap = |t, tile, consumer| Snapshot {
            workspace: "w".into(),
            pid: 1,
            creator_alive: true,
            generation: 1,
            taken_ns: t,
            since_ns: None,
            tiles: vec![tile],
            links: vec![],
            consumers: vec![consumer],
        };
        let a = snap(1_000, tile(100, 900, 50), consumer(10, 10));
        let b = snap(2_000, tile(250, 1_900, 80), consumer(25, 25));
        let d = b.delta(&a);
        assert_eq!(d.since_ns, Some(1_000));
        assert_eq!(d.tiles[0].loops, 150);
        assert_eq!(d.tiles[0].backpressure_count, 15);
        assert_eq!(
            d.tiles[0].heartbeat_ns, 1_900,
            "gauges keep the current value"
        );
        assert_eq!(d.tiles[0].time_ns.finish, 30);
        assert_eq!(d.tiles[0].time_ns.wait, 0);
        assert_eq!(d.consumers[0].counters.frags, 15);
        assert_eq!(d.consumers[0].counters.bytes, 15 * 64);
        assert_eq!(d.consumers[0].rx_seq, 25);
        assert_eq!(d.tiles[0].heartbeat_age_ns(2_000), 100);
        let shares = TimeSplit {
            finish: 3,
            wait: 1,
            ..TimeSplit::default()
        }
        .shares();
        assert_eq!(shares[Bucket::Finish as usize], 0.75);
        assert_eq!(TimeSplit::default().shares(), [0.0; BUCKETS]);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // the workspace is a mapped file
    fn reads_a_workspace_attached_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = Workspace::create(&crate::workspace::WorkspaceOptions {
            name: "snap".into(),
            dir: Some(dir.path().into()),
            size: 1 << 20,
        })
        .unwrap();
        let r = ws
            .alloc(ObjectKind::TileMetrics, "src:0", TileMetrics::FOOTPRINT)
            .unwrap();
        let m = TileMetrics::new(&r).unwrap();
        m.cpu.store(u64::MAX, Ordering::Relaxed);
        m.time_ns[Bucket::Finish as usize].store(7, Ordering::Relaxed);
        let r = ws
            .alloc(ObjectKind::ConsumerMetrics, "src->dst@dst:0", 128)
            .unwrap();
        ConsumerMetrics::new(&r)
            .unwrap()
            .ovrnp
            .store(3, Ordering::Relaxed);
        // An object whose magic is not written yet is skipped, never misread.
        ws.alloc(ObjectKind::LinkMetrics, "src->dst", 128).unwrap();
        ws.mark_ready();
        let ro = Workspace::attach_read_only_at(ws.path()).unwrap();
        let s = Snapshot::read(&ro);
        assert_eq!(s.tiles.len(), 1);
        assert_eq!(s.tiles[0].cpu, None);
        assert_eq!(s.tiles[0].time_ns.finish, 7);
        assert_eq!(s.tiles[0].state, "boot");
        assert!(s.links.is_empty());
        assert_eq!(s.consumers[0].link, "src->dst");
        assert_eq!(s.consumers[0].tile, "dst:0");
        assert_eq!(s.consumers[0].counters.ovrnp, 3);
    }
}
