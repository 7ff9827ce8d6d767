//! `dyno results report`: one self-contained HTML file for stored runs (dyno-results'
//! [`dyno_results::runs_report`]), answering first with what the command found: a machine
//! run's requirements judged by dyno-hw, a pipeline bench's bottleneck from dyno-pipeline.

use dyno_store::{RunId, Store, StoredRun};
use std::path::Path;
use std::process::ExitCode;

/// Reads the runs, renders the report and writes it atomically to `output`.
pub fn write(store: &Store, ids: &[RunId], output: &Path) -> anyhow::Result<ExitCode> {
    let runs: Vec<StoredRun> = ids
        .iter()
        .map(|id| store.run(*id))
        .collect::<Result<_, _>>()?;
    crate::term::write_file("--output", output, &render(&runs))?;
    Ok(ExitCode::SUCCESS)
}

/// The HTML document for `runs` (at least one).
pub fn render(runs: &[StoredRun]) -> String {
    dyno_results::runs_report(runs, &answer, format!("dyno {}", env!("CARGO_PKG_VERSION")))
}

/// A run's answer, from its command's crate: a machine run's requirements, a pipeline
/// bench's bottleneck (`None` for the other commands).
pub fn answer(run: &StoredRun) -> Option<dyno_report::Section> {
    dyno_hw::stored_verdict_section(run).or_else(|| dyno_pipeline::stored_diagnosis_section(run))
}
