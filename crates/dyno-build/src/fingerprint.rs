//! Fingerprints of what goes into a build: a file's SHA-256, short stable ids, and a
//! source tree's fingerprint (path, size and modification time of every file), so an
//! unchanged input is recognised without building again.

use crate::error::BuildError;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Result<String, BuildError> {
    let io = |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(io)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The first 10 hex digits of the SHA-256 of `bytes`: short, stable ids (the same on
/// every machine and version, so records written by one dyno are read by the next).
pub fn short_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// The directory whose files are a cargo build's sources: the nearest ancestor of the
/// manifest holding a `Cargo.lock` (the workspace root), else the manifest's directory.
pub fn source_root(manifest: &Path) -> PathBuf {
    let dir = manifest.parent().unwrap_or(Path::new(".")).to_path_buf();
    dir.ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map_or(dir.clone(), Path::to_path_buf)
}

/// A hash of path, size and modification time of every file under `root`, skipping
/// `target` directories, hidden directories and `skip` (a tool's own work directory).
pub fn source_fingerprint(root: &Path, skip: &Path) -> String {
    let mut entries = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in read.flatten() {
            let path = e.path();
            let name = e.file_name();
            let name = name.to_string_lossy();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if name == "target" || name.starts_with('.') || path == skip {
                    continue;
                }
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                entries.push(format!("{rel}\t{}\t{}", meta.len(), mtime_ns(&meta)));
            }
        }
    }
    entries.sort();
    short_hash(entries.join("\n").as_bytes())
}

/// A file's modification time in nanoseconds since the epoch (0 when unknown).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_follow_sources() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.lock"), "x").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
        let skip = dir.path().join("study.tune");
        let a = source_fingerprint(dir.path(), &skip);
        std::fs::write(dir.path().join("target/debug/junk"), "built").unwrap();
        std::fs::create_dir(&skip).unwrap();
        std::fs::write(skip.join("x"), "x").unwrap();
        assert_eq!(a, source_fingerprint(dir.path(), &skip));
        std::fs::write(dir.path().join("src/main.rs"), "fn main() { }").unwrap();
        assert_ne!(a, source_fingerprint(dir.path(), &skip));
        assert_eq!(source_root(&dir.path().join("Cargo.toml")), dir.path());
    }

    #[test]
    fn short_hashes_are_stable() {
        // Records on disk hold these: a change of function would rebuild everything.
        assert_eq!(short_hash(b"dyno"), "e3bd85a7dc");
    }
}
