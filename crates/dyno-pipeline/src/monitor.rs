//! `dyno pipeline monitor`'s panes: a workspace's tiles and links as tables, counters with
//! their change since the previous snapshot, time shares over that interval (what the
//! tiles do now, not since start), and the cells that point at a bottleneck marked. The
//! binary draws them live or prints them once.

use crate::{BenchConfig, Error, Result};
use dyno_model::{format_value, Unit};
use dyno_report::{Align, Cell, Status, Table};
use dyno_tango::{LayoutConfig, Snapshot, Workspace};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A heartbeat older than this means the tile is stuck or gone.
const STALE_NS: u64 = 100_000_000;

/// The workspace a `pipeline run` layout or a `pipeline bench` config names (both say
/// where their workspace is); a file that is neither is refused with both reasons.
pub fn workspace_of(file: &Path) -> Result<PathBuf> {
    let ws = match LayoutConfig::from_file(file) {
        Ok(cfg) => cfg.workspace,
        Err(layout) => match BenchConfig::from_file(file) {
            Ok(cfg) => cfg.workspace,
            Err(bench) => {
                return Err(Error::NotAConfig {
                    layout: layout.to_string(),
                    bench: bench.to_string(),
                })
            }
        },
    };
    Ok(dyno_tango::workspace::workspace_path(
        &ws.name,
        ws.dir.as_deref(),
    ))
}

/// Attaches read-only to the workspace at `path` once it exists and its pipeline is
/// ready, looking every 100 ms; `on_wait` is told once when it has to wait. Gives up with
/// [`Error::NoPipeline`] after `wait_s` seconds (0: waits until the pipeline comes).
pub fn attach(path: &Path, wait_s: u64, on_wait: impl FnOnce()) -> Result<Workspace> {
    let start = Instant::now();
    let mut on_wait = Some(on_wait);
    loop {
        if let Ok(ws) = Workspace::attach_read_only_at(path) {
            if ws.is_ready() {
                return Ok(ws);
            }
        }
        if wait_s > 0 && start.elapsed() >= Duration::from_secs(wait_s) {
            return Err(Error::NoPipeline {
                path: path.to_path_buf(),
                waited_s: wait_s,
            });
        }
        if let Some(tell) = on_wait.take() {
            tell();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn count_cell(total: u64, change: u64, alarming: bool) -> Cell {
    let c = Cell::new(format!("{total} (+{change})"));
    if alarming && change > 0 {
        c.bad()
    } else {
        c
    }
}

fn pct_cell(share: f64, status: Option<Status>) -> Cell {
    let c = Cell::new(format!("{:.1}", share * 100.0));
    match status {
        Some(s) => c.with_status(s),
        None => c,
    }
}

/// The tile pane and the link pane for the current snapshot and its change.
pub fn panes(cur: &Snapshot, delta: &Snapshot) -> (Table, Table) {
    (tiles_pane(cur, delta), links_pane(cur, delta))
}

/// One row per tile: where it runs, its state, and its loop time per bucket.
fn tiles_pane(cur: &Snapshot, delta: &Snapshot) -> Table {
    let mut tiles = Table::new("tiles")
        .column("tile", Align::Left)
        .column("tid", Align::Right)
        .column("cpu", Align::Right)
        .column("stale", Align::Right)
        .column("state", Align::Left)
        .column("in backp", Align::Center)
        .column("backp cnt", Align::Right)
        .column("ctx sw", Align::Right);
    for h in [
        "% hkeep", "% backp", "% wait", "% ovrnp", "% ovrnr", "% filt1", "% filt2", "% finish",
    ] {
        tiles = tiles.column(h, Align::Right);
    }
    for (t, d) in cur.tiles.iter().zip(&delta.tiles) {
        let age = t.heartbeat_age_ns(cur.taken_ns);
        let stale = Cell::new(format_value(age as f64 / 1e9, Unit::Seconds));
        let shares = d.time_ns.shares();
        let mut row = vec![
            Cell::new(t.name.clone()),
            Cell::new(t.tid.to_string()),
            Cell::new(t.cpu.map_or("float".into(), |c| c.to_string())),
            if age > STALE_NS { stale.bad() } else { stale },
            // A killed run's tiles keep the state they last wrote: a dead thread says so.
            if t.alive {
                Cell::new(t.state.clone())
            } else {
                Cell::new(format!("dead (was {})", t.state)).bad()
            },
            if t.in_backpressure {
                Cell::new("yes").warn()
            } else {
                Cell::new("-")
            },
            count_cell(t.backpressure_count, d.backpressure_count, false),
            count_cell(
                t.ctx_voluntary + t.ctx_involuntary,
                d.ctx_voluntary + d.ctx_involuntary,
                false,
            ),
        ];
        for (i, share) in shares.iter().enumerate() {
            // Backpressure and overruns are the shares that point at a bottleneck.
            let status = match i {
                1 if *share > 0.05 => Some(Status::Warn),
                3 | 4 if *share > 0.0 => Some(Status::Bad),
                7 if *share > 0.95 => Some(Status::Warn),
                _ => None,
            };
            row.push(pct_cell(*share, status));
        }
        tiles.push_row(row);
    }
    tiles
}

/// One row per consumer of a link: its rates, filtering, losses and lag.
fn links_pane(cur: &Snapshot, delta: &Snapshot) -> Table {
    let secs = delta
        .since_ns
        .map(|s| cur.taken_ns.saturating_sub(s) as f64 / 1e9)
        .filter(|s| *s > 0.0)
        .unwrap_or(1.0);
    let mut links = Table::new("links")
        .column("link", Align::Left)
        .column("consumer", Align::Left)
        .column("tot frags/s", Align::Right)
        .column("tot bytes/s", Align::Right)
        .column("filt %", Align::Right)
        .column("ovrnp cnt", Align::Right)
        .column("ovrnr cnt", Align::Right)
        .column("slow cnt", Align::Right)
        .column("tx seq", Align::Right);
    for (c, d) in cur.consumers.iter().zip(&delta.consumers) {
        let tx = cur
            .links
            .iter()
            .find(|l| l.name == c.link)
            .map(|l| l.tx_seq);
        let dc = &d.counters;
        let seen = dc.frags + dc.filt1 + dc.filt2;
        let filt = if seen == 0 {
            0.0
        } else {
            (dc.filt1 + dc.filt2) as f64 / seen as f64
        };
        links.push_row([
            Cell::new(c.link.clone()),
            Cell::new(format!(
                "{}{}",
                c.tile,
                if c.reliable { "" } else { " (unreliable)" }
            )),
            Cell::new(format_value(dc.frags as f64 / secs, Unit::PerSecond)),
            Cell::new(format_value(dc.bytes as f64 / secs, Unit::BytesPerSecond)),
            Cell::new(format!("{:.1}", filt * 100.0)),
            count_cell(c.counters.ovrnp, dc.ovrnp, true),
            count_cell(c.counters.ovrnr, dc.ovrnr, true),
            count_cell(c.slow, d.slow, false),
            Cell::new(tx.map_or("-".into(), |t| t.to_string())),
        ]);
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attaching_gives_up_after_the_wait_having_said_once_that_it_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nothing.wksp");
        let mut told = 0;
        let e = attach(&path, 1, || told += 1).unwrap_err();
        assert_eq!(told, 1);
        assert!(
            matches!(&e, Error::NoPipeline { path: p, waited_s: 1 } if *p == path),
            "{e}"
        );
        assert!(e.to_string().starts_with("no running pipeline at "), "{e}");
    }
}
