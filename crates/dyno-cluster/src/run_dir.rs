//! What a run directory holds, read back: slot 0's start from its genesis file (the
//! launcher after writing it, the fault analysis of a stored run).

use crate::error::ClusterError;
use std::path::Path;

/// Slot 0's start from the genesis file `dyno node genesis` wrote.
pub(crate) fn genesis_time_ns(genesis: &Path) -> Result<u64, ClusterError> {
    let text = std::fs::read_to_string(genesis).map_err(|source| ClusterError::Io {
        path: genesis.to_path_buf(),
        source,
    })?;
    let value: toml::Table = toml::from_str(&text).map_err(|e| ClusterError::Launch {
        what: format!("{}: {}", genesis.display(), e.message()),
    })?;
    value
        .get("genesis_time_ms")
        .and_then(toml::Value::as_integer)
        .map(|ms| ms as u64 * 1_000_000)
        .ok_or_else(|| ClusterError::Launch {
            what: format!("{}: no genesis_time_ms", genesis.display()),
        })
}
