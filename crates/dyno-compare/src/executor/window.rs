//! The measured windows of a start: one /proc sampler over every node's and load's tree,
//! a scrape of every node's metrics endpoint each second, each node's JSON lines, and
//! what the rest of the machine used meanwhile (the window's disturbance), for every
//! subject of the start in the same seconds.

use super::running::{wait_until, Running};
use super::Interruption;
use crate::execution::{process_series, Series};
use crate::jsonl;
use crate::prometheus::{parse_text, Endpoint, Scrapes};
use crate::sampler::{sample_between, ProcReading, ProcSample, ProcSampler};
use dyno_exec::Disturbance;
use dyno_proc::busy::OthersWatch;
use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Scrapes of a reachable endpoint that may fail in a row before the node counts as no
/// longer answering.
pub const MISSED_SCRAPES: usize = 5;

/// The node's own metrics scraped during a window.
#[derive(Default)]
pub(super) struct NodeMetrics {
    pub(super) scrapes: Scrapes,
    pub(super) answered: bool,
    pub(super) missed: usize,
    pub(super) warned: bool,
}

/// A node's metrics endpoint that answered, then failed [`MISSED_SCRAPES`] times in a row.
#[derive(Debug, thiserror::Error)]
#[error("stopped answering: {missed} scrapes of {url} failed in a row ({last})")]
pub(super) struct StoppedAnswering {
    missed: usize,
    url: String,
    last: dyno_proc::HttpError,
}

impl NodeMetrics {
    pub(super) fn scrape(
        &mut self,
        ep: &Endpoint,
        keep: &[String],
        t: f64,
        warnings: &mut Vec<String>,
    ) -> Result<(), StoppedAnswering> {
        match ep.scrape(Duration::from_millis(500)) {
            Ok(body) => {
                self.answered = true;
                self.missed = 0;
                self.scrapes.add(t, &parse_text(&body, keep));
                Ok(())
            }
            Err(e) if self.answered => {
                self.missed += 1;
                if self.missed >= MISSED_SCRAPES {
                    Err(StoppedAnswering {
                        missed: self.missed,
                        url: format!("http://{}{}", ep.authority, ep.path),
                        last: e,
                    })
                } else {
                    Ok(())
                }
            }
            Err(e) => {
                if !self.warned {
                    self.warned = true;
                    warnings.push(format!(
                        "metrics endpoint http://{}{} unreachable ({e}): keeping the process metrics only",
                        ep.authority, ep.path
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Which tree of the sampler a reading belongs to: a subject's node or its load.
#[derive(Clone, Copy)]
struct Tree {
    subject: usize,
    load: bool,
}

/// One subject's samples over a window.
#[derive(Default)]
struct Samples {
    node: Vec<ProcSample>,
    load: Vec<ProcSample>,
}

/// Measures `windows` consecutive windows of `window_s` seconds for every subject of the
/// start at once, one sample every `interval`, filling each subject's execution of each
/// window; returns the windows' starts (the load's lines are cut by them), and `Err` with
/// why when something ended the start first.
pub(super) fn measure(
    running: &mut [Running<'_>],
    window_s: f64,
    windows: u32,
    interval: Duration,
    stop: &AtomicBool,
) -> (Vec<Instant>, Result<(), Interruption>) {
    let mut starts = Vec::new();
    let mut metrics: Vec<NodeMetrics> = running.iter().map(|_| NodeMetrics::default()).collect();
    for w in 0..windows as usize {
        starts.push(Instant::now());
        if let Err(e) = one_window(running, &mut metrics, w, window_s, interval, stop) {
            return (starts, Err(e));
        }
    }
    (starts, Ok(()))
}

/// The sampler's trees: every node, then its load, in subject order.
fn trees(running: &[Running<'_>]) -> (Vec<u32>, Vec<Tree>) {
    let mut pids = Vec::new();
    let mut trees = Vec::new();
    for (i, r) in running.iter().enumerate() {
        pids.push(r.node.pid());
        trees.push(Tree {
            subject: i,
            load: false,
        });
        if let Some(l) = &r.load {
            pids.push(l.child.pid());
            trees.push(Tree {
                subject: i,
                load: true,
            });
        }
    }
    (pids, trees)
}

/// Reads every tree once; a process that exits shows up first as an unreadable or
/// zombie /proc entry: its exit status, read then, says more than "vanished".
fn read(
    sampler: &ProcSampler,
    trees: &[Tree],
    running: &mut [Running<'_>],
) -> Result<Vec<ProcReading>, Interruption> {
    let mut out = Vec::with_capacity(trees.len());
    for (reading, tree) in sampler.read_all().into_iter().zip(trees) {
        let r = &mut running[tree.subject];
        let i = tree.subject;
        out.push(reading.map_err(|e| match (tree.load, r.exited(i)) {
            (_, Some(why)) => why,
            (false, None) => {
                Interruption::Failed(i, format!("vanished from /proc while measured ({e})"))
            }
            (true, None) => Interruption::LoadExited(i, format!("vanished from /proc: {e}")),
        })?);
    }
    Ok(out)
}

/// Window `w` of every subject: samples, scrapes, JSON lines and the disturbance.
fn one_window(
    running: &mut [Running<'_>],
    metrics: &mut [NodeMetrics],
    w: usize,
    window_s: f64,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<(), Interruption> {
    let (pids, trees) = trees(running);
    let sampler = ProcSampler::many(&pids);
    // Every other process is followed through the window (a reading each tick), so one
    // that a burst starts inside it, or that exits before its end, is named.
    let mut watch = dyno_proc::busy::read_machine().map(OthersWatch::new);
    let mut prev = read(&sampler, &trees, running)?;
    let mut tree_pids = pids_of(&prev);
    let t0 = prev.first().map_or(0.0, |r| r.t);
    let jsonl_start: Vec<Option<u64>> = running
        .iter()
        .map(|r| r.jsonl.as_deref().map(jsonl::offset))
        .collect();
    let mut samples: Vec<Samples> = running.iter().map(|_| Samples::default()).collect();
    // CPU seconds of every measured tree: what is not the rest of the machine.
    let mut measured_s = 0.0;
    let window = Duration::from_secs_f64(window_s);
    let begin = Instant::now();
    // One clock reading for every subject: side by side, their windows are the same.
    let opened_at = dyno_model::now_unix();
    let mut tick = 1u32;
    loop {
        wait_until(running, begin + interval * tick, stop)?;
        let next = read(&sampler, &trees, running)?;
        tree_pids.extend(pids_of(&next));
        if let (Some(w), Some(m)) = (&mut watch, dyno_proc::busy::read_machine()) {
            w.update(m);
        }
        for ((a, b), tree) in prev.iter().zip(&next).zip(&trees) {
            let s = sample_between(a, b, sampler.clk_tck());
            measured_s += s.cpu_percent / 100.0 * (b.t - a.t);
            let of = &mut samples[tree.subject];
            if tree.load {
                of.load.push(s)
            } else {
                of.node.push(s)
            }
        }
        prev = next;
        let t = prev.first().map_or(0.0, |r| r.t) - t0;
        for (i, r) in running.iter_mut().enumerate() {
            let Some(ep) = &r.endpoint else { continue };
            let keep = &r.subject.metrics.prometheus_metrics;
            if let Err(why) = metrics[i].scrape(ep, keep, t, &mut r.execs[w].warnings) {
                return Err(Interruption::Failed(i, why.to_string()));
            }
        }
        if interval * tick >= window {
            break;
        }
        tick += 1;
    }
    let closed_at = dyno_model::now_unix();
    let seconds = prev.first().map_or(0.0, |r| r.t) - t0;
    let disturbance = watch.map(|w| others(&w, measured_s, &tree_pids, seconds));
    for (i, r) in running.iter_mut().enumerate() {
        let e = &mut r.execs[w];
        e.window_at = Some((opened_at, closed_at));
        let s = std::mem::take(&mut samples[i]);
        e.series.extend(process_series(&s.node, t0));
        e.series.extend(load_series(&s.load, t0));
        e.series
            .extend(std::mem::take(&mut metrics[i].scrapes).into_series());
        if let Some(d) = &disturbance {
            e.series.push(d.series());
            e.disturbance = Some(d.clone());
        }
        if let (Some(path), Some(start)) = (&r.jsonl, jsonl_start[i]) {
            match jsonl::read_range(path, start, jsonl::offset(path)) {
                Ok(window) => {
                    e.series.extend(window.series);
                    e.warnings.extend(window.notes);
                }
                Err(err) => e.warnings.push(format!("{}: {err}", path.display())),
            }
        }
    }
    Ok(())
}

/// Every pid of the measured trees in one reading.
fn pids_of(readings: &[ProcReading]) -> HashSet<u32> {
    readings
        .iter()
        .flat_map(|r| r.processes.iter().map(|p| p.pid))
        .collect()
}

/// What the rest of the machine used over a window: the host's busy time less the
/// measured trees' (`measured_s`: every node and load of the start; `tree_pids`: every
/// pid any reading of their trees saw) and dyno's own.
fn others(
    watch: &OthersWatch,
    measured_s: f64,
    tree_pids: &HashSet<u32>,
    seconds: f64,
) -> Disturbance {
    let o = watch.others(measured_s, tree_pids, seconds);
    Disturbance {
        other_cpu_percent: 100.0 * o.cpu_share,
        busiest: o.busiest.map(|p| (p.name, p.pid, 100.0 * p.cpu_share)),
    }
}

/// The load generator's own CPU and memory, named `load:...`.
fn load_series(samples: &[ProcSample], t0: f64) -> Vec<Series> {
    process_series(samples, t0)
        .into_iter()
        .filter(|s| matches!(s.metric.name.as_str(), "cpu_percent" | "rss_bytes"))
        .map(|mut s| {
            s.metric.name = format!("load:{}", s.metric.name);
            s
        })
        .collect()
}
