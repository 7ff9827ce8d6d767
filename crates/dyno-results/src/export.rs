//! `dyno results export --output FILE`: the samples written as a [`dyno_report::OutputFile`]
//! (beside the target and renamed into place, so a failed export leaves no half file;
//! written through to a device, FIFO or a symbolic link's target; a directory refused).

use crate::ResultsError;
use dyno_report::OutputFile;
use dyno_store::{ExportFormat, RunId, Store, StoreError};
use std::io::Write as _;
use std::path::Path;

/// Exports the samples of `runs` (every run when empty) to `path` in `format`; returns
/// the number of samples written. On any failure a regular target is left as it was.
pub fn export_file(
    store: &Store,
    runs: &[RunId],
    format: ExportFormat,
    path: &Path,
) -> Result<u64, ResultsError> {
    let output = |source| ResultsError::Output {
        path: path.to_path_buf(),
        source,
    };
    let file = OutputFile::create(path).map_err(output)?;
    let mut out = std::io::BufWriter::new(file);
    let rows = store.export(runs, format, &mut out).map_err(|e| match e {
        // The destination's failure, said once and naming the flag.
        StoreError::Export(source) => output(source),
        other => ResultsError::Store(other),
    })?;
    out.flush().map_err(output)?;
    let file = out.into_inner().map_err(|e| output(e.into_error()))?;
    file.commit().map_err(output)?;
    Ok(rows)
}
