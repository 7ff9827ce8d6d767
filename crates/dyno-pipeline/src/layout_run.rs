//! `dyno pipeline run`: a layout of synthetic tiles ([`dyno_tango::run_synthetic`]) as a
//! stored run (its headline numbers, one repetition) and the summary people read.

use crate::Result;
use dyno_model::{Direction, Host, Metric, RunInfo, RunStatus, Sample, Subject, SubjectKind, Unit};
use dyno_store::Store;
use dyno_tango::{LayoutConfig, RunSummary};
use std::fmt::Write as _;
use std::path::Path;

/// How a layout run was asked for, stored with it.
#[derive(Debug, Clone)]
pub struct LayoutInvocation<'a> {
    /// The layout file.
    pub config: &'a Path,
    /// When the run started (Unix seconds).
    pub started_at: f64,
    /// The exact command line.
    pub command_line: Vec<String>,
    /// dyno's version and build.
    pub tool_version: String,
    /// The machine.
    pub host: Host,
}

/// Records a layout run's headline numbers (frags per second and frags lost, one
/// repetition) as a complete run; returns its id.
pub fn store_layout_run(
    store: &mut Store,
    cfg: &LayoutConfig,
    s: &RunSummary,
    invocation: LayoutInvocation,
) -> Result<i64> {
    let mut subject = Subject::new(SubjectKind::Layout, cfg.workspace.name.clone())
        .with("affinity", cfg.layout.affinity.clone())
        .with("idle", cfg.layout.idle.clone());
    for t in &cfg.layout.tiles {
        subject = subject.with(format!("{}_tile_count", t.kind), t.count.to_string());
    }
    let info = RunInfo {
        command: "pipeline".into(),
        subject,
        host: invocation.host,
        started_at: invocation.started_at,
        command_line: invocation.command_line,
        tool_version: invocation.tool_version,
        settings: serde_json::json!({
            "config": invocation.config.display().to_string(),
            // The layout as written, so the run can be reproduced from the store alone.
            "layout_toml": std::fs::read_to_string(invocation.config).unwrap_or_default(),
        }),
    };
    let rate = Metric::new(
        "frags_per_second",
        Unit::PerSecond,
        Direction::HigherIsBetter,
    );
    let lost = Metric::new("frags_lost", Unit::Count, Direction::LowerIsBetter);
    let id = store.begin_run(&info, &[rate.clone(), lost.clone()])?;
    let lost_total: u64 = s.sinks.iter().map(|k| k.ovrnp + k.ovrnr).sum();
    store.add_samples(
        id,
        &[
            Sample {
                metric: rate.name,
                repetition: 0,
                value: s.frags_per_sec,
            },
            Sample {
                metric: lost.name,
                repetition: 0,
                value: lost_total as f64,
            },
        ],
    )?;
    store.finish_run(id, RunStatus::Complete)?;
    Ok(id)
}

/// The summary after a layout run: the source's rate and backpressure, each sink's frags
/// and losses, and the run it was saved as.
pub fn layout_summary_text(s: &RunSummary, run_id: Option<i64>) -> String {
    let mut out = String::new();
    let secs = s.elapsed_ns as f64 / 1e9;
    let _ = writeln!(
        out,
        "source: {} frags in {secs:.2} s = {:.0} frags/s, backpressured {} times",
        s.published, s.frags_per_sec, s.source_backpressure
    );
    for k in &s.sinks {
        let _ = writeln!(
            out,
            "{}: {} frags read, {} filtered, {} lost to overrun while polling, {} while reading, {} bad payloads",
            k.tile, k.frags, k.filt1, k.ovrnp, k.ovrnr, k.bad_payloads
        );
    }
    if let Some(id) = run_id {
        let _ = writeln!(out, "Saved as run {id} (dyno results show {id}).");
    }
    out
}
