//! `dyno results export --output FILE`: the samples written beside the target and renamed
//! into place, so a failed export leaves no half file.

use crate::ResultsError;
use dyno_store::{ExportFormat, RunId, Store};
use std::io::Write as _;
use std::path::Path;

/// Exports the samples of `runs` (every run when empty) to `path` in `format`; returns
/// the number of samples written. On any failure the partial file is removed.
pub fn export_file(
    store: &Store,
    runs: &[RunId],
    format: ExportFormat,
    path: &Path,
) -> Result<u64, ResultsError> {
    let tmp = path.with_extension(format!(
        "{}.part",
        path.extension().and_then(|e| e.to_str()).unwrap_or("out")
    ));
    let output = |source| ResultsError::Output {
        path: path.to_path_buf(),
        source,
    };
    let result = (|| -> Result<u64, ResultsError> {
        let file = std::fs::File::create(&tmp).map_err(output)?;
        let mut out = std::io::BufWriter::new(file);
        let rows = store.export(runs, format, &mut out)?;
        out.flush().map_err(|source| ResultsError::Writing {
            path: path.to_path_buf(),
            source,
        })?;
        std::fs::rename(&tmp, path).map_err(output)?;
        Ok(rows)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
