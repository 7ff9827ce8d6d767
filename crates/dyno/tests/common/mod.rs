//! What the `dyno machine` test files share: tiny durations and a temporary store and
//! disk directory per test. Each file adds its own `impl Env` (how it runs `dyno`).
// Each test file is its own crate and uses only part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Fast settings for every metric.
pub const QUICK: [&str; 10] = [
    "--hash-duration",
    "0.02",
    "--verify-duration",
    "0.02",
    "--memory-duration",
    "0.02",
    "--disk-duration",
    "0.02",
    "--extra-duration",
    "0.02",
];

/// One test's temporary directory: the results store and the disk benchmark's files.
pub struct Env {
    pub dir: TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }
    pub fn disk(&self) -> PathBuf {
        let d = self.dir.path().join("disk");
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}

/// Entries in `dir` (to show nothing was left behind).
pub fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}
