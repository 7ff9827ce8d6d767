//! `dyno results report`: one self-contained HTML file for stored runs (dyno-results'
//! [`dyno_results::runs_report`]), with a machine run's requirements judged by dyno-hw.

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
    dyno_results::runs_report(
        runs,
        &dyno_hw::stored_verdict_section,
        format!("dyno {}", env!("CARGO_PKG_VERSION")),
    )
}
