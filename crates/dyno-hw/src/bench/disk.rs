//! Disk write benchmarks, with Substrate's file names, sizes, seed and write pattern.
//!
//! Temporary files are removed when the workload is dropped (success, error, full disk)
//! and are also listed in a process-wide registry so that an interrupt handler can remove
//! them with [`remove_temp_files`] when the process must exit at once. A run killed
//! outright (SIGKILL, the OOM killer) removes nothing: each file is held with an
//! exclusive `flock` while it exists, so the next run tells a dead run's file (nobody
//! holds it) from a live one's and removes it ([`clear_leftovers`]), and two runs never
//! write the same file.

use super::{seeded_rng, Benchmark, Context, Execution};
use crate::harness::Workload;
use crate::{HwError, MetricId};
use rand::seq::SliceRandom;
use rand_core::RngCore;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Both disk benchmarks write a 64 MiB file.
const FILE_SIZE: usize = 64 * 1024 * 1024;
/// Random writes land on a 4096-byte stride...
const STRIDE: usize = 4096;
/// ...and write half a sector each, on purpose, to force read-modify-write cycles.
const CHUNK: usize = 2048;

/// Upstream's file names, so an operator who knows them recognises leftovers.
pub const SEQ_FILE: &str = ".disk_bench_seq_wr.tmp";
/// See [`SEQ_FILE`].
pub const RND_FILE: &str = ".disk_bench_rand_wr.tmp";

static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Removes every temporary file a disk benchmark of this process still holds. Safe to
/// call from an interrupt handler thread; idempotent.
pub fn remove_temp_files() {
    let mut files = TEMP_FILES.lock().unwrap_or_else(|p| p.into_inner());
    for path in files.drain(..) {
        let _ = std::fs::remove_file(path);
    }
}

/// A benchmark file that removes itself when dropped.
struct TempFile {
    file: File,
    path: PathBuf,
}

/// Removes the benchmark files a killed run left in `dir` (files no live process holds
/// locked); returns those it removed. A live run's files are left alone.
pub fn clear_leftovers(dir: &Path) -> Vec<PathBuf> {
    [SEQ_FILE, RND_FILE]
        .iter()
        .filter_map(|name| {
            let path = dir.join(name);
            let file = File::open(&path).ok()?;
            // Held while it is removed: a run starting now cannot take it meanwhile.
            file.try_lock().ok()?;
            std::fs::remove_file(&path).ok()?;
            Some(path)
        })
        .collect()
}

impl TempFile {
    fn create(dir: &Path, name: &str) -> Result<TempFile, HwError> {
        let path = dir.join(name);
        // Not truncated on open: another live run's file must be refused, not emptied.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| HwError::io(&path, "create the disk benchmark file", e))?;
        file.try_lock().map_err(|e| {
            let e = match e {
                std::fs::TryLockError::WouldBlock => std::io::Error::other(
                    "another dyno machine is writing it (one disk benchmark per directory at a time)",
                ),
                std::fs::TryLockError::Error(e) => e,
            };
            HwError::io(&path, "lock the disk benchmark file", e)
        })?;
        file.set_len(0)
            .map_err(|e| HwError::io(&path, "empty the disk benchmark file", e))?;
        TEMP_FILES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.clone());
        Ok(TempFile { file, path })
    }

    fn err(&self, what: &str, e: std::io::Error) -> HwError {
        HwError::io(&self.path, what, e)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Removed only after the measurement: removing it earlier would let the kernel
        // drop dirty pages instead of writing them.
        let _ = std::fs::remove_file(&self.path);
        let mut files = TEMP_FILES.lock().unwrap_or_else(|p| p.into_inner());
        files.retain(|p| p != &self.path);
    }
}

/// Upstream's random data: the seeded Pcg64 stream.
fn random_data(size: usize) -> Vec<u8> {
    let mut buffer = vec![0u8; size];
    seeded_rng().fill_bytes(&mut buffer);
    buffer
}

/// Sequential write: 64 MiB in one `write`, `fsync`, seek back to the start.
pub struct DiskSeqWrite;

/// Working state of [`DiskSeqWrite`].
pub struct SeqWorkload {
    file: TempFile,
    data: Vec<u8>,
}

impl Benchmark for DiskSeqWrite {
    fn id(&self) -> MetricId {
        MetricId::DiskSeqWrite
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        let data = random_data(FILE_SIZE);
        let file = TempFile::create(&ctx.base_path, SEQ_FILE)?;
        file.file
            .sync_all()
            .map_err(|e| file.err("fsync the disk benchmark file", e))?;
        Ok(Box::new(SeqWorkload { file, data }))
    }
}

impl Workload for SeqWorkload {
    fn work_per_iteration(&self) -> f64 {
        FILE_SIZE as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        let f = &mut self.file.file;
        let r = f
            .write_all(&self.data)
            .and_then(|_| f.sync_all())
            .and_then(|_| f.seek(SeekFrom::Start(0)).map(|_| ()));
        r.map_err(|e| self.file.err("write the disk benchmark file", e))
    }
}

/// Random write: 16,384 shuffled 2 KiB writes at a 4 KiB stride into a pre-filled
/// 64 MiB file, then one `fsync`. Counts 32 MiB per iteration, as upstream.
pub struct DiskRndWrite;

/// Working state of [`DiskRndWrite`].
pub struct RndWorkload {
    file: TempFile,
    data: Vec<u8>,
    positions: Vec<usize>,
}

/// The write offsets, shuffled with upstream's seeded generator and shuffle.
pub fn random_positions() -> Vec<usize> {
    let mut positions: Vec<usize> = (0..FILE_SIZE).step_by(STRIDE).collect();
    positions.shuffle(&mut seeded_rng());
    positions
}

impl Benchmark for DiskRndWrite {
    fn id(&self) -> MetricId {
        MetricId::DiskRndWrite
    }
    fn execution(&self, _ctx: &Context) -> Execution {
        Execution::Single
    }
    fn prepare(&self, ctx: &Context) -> Result<Box<dyn Workload>, HwError> {
        let data = random_data(FILE_SIZE);
        let mut file = TempFile::create(&ctx.base_path, RND_FILE)?;
        let f = &mut file.file;
        let r = f.write_all(&data).and_then(|_| f.sync_all());
        r.map_err(|e| file.err("fill the disk benchmark file", e))?;
        Ok(Box::new(RndWorkload {
            file,
            data,
            positions: random_positions(),
        }))
    }
}

impl Workload for RndWorkload {
    fn work_per_iteration(&self) -> f64 {
        (FILE_SIZE / 2) as f64
    }
    fn iterate(&mut self) -> Result<(), HwError> {
        let f = &mut self.file.file;
        for &pos in &self.positions {
            let r = f
                .seek(SeekFrom::Start(pos as u64))
                .and_then(|_| f.write_all(&self.data[pos..pos + CHUNK]));
            r.map_err(|e| HwError::io(&self.file.path, "write the disk benchmark file", e))?;
        }
        f.sync_all()
            .map_err(|e| HwError::io(&self.file.path, "fsync the disk benchmark file", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry is process-wide: tests that create or clear files take turns.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn positions_cover_the_file_once_in_a_fixed_shuffled_order() {
        let p = random_positions();
        assert_eq!(p.len(), 16_384);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert!(sorted.iter().enumerate().all(|(i, &x)| x == i * STRIDE));
        assert_ne!(p, sorted, "shuffled");
        assert_eq!(p, random_positions(), "same seed, same order");
    }

    #[test]
    fn a_dead_runs_file_is_cleared_and_a_live_runs_file_is_neither_cleared_nor_shared() {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        // What a killed run leaves: the file, no lock.
        std::fs::write(dir.path().join(SEQ_FILE), vec![7u8; 4096]).unwrap();
        assert_eq!(clear_leftovers(dir.path()), [dir.path().join(SEQ_FILE)]);
        assert!(!dir.path().join(SEQ_FILE).exists());
        // A live run's file: kept by the clearing, refused to a second run.
        let live = TempFile::create(dir.path(), RND_FILE).unwrap();
        assert!(clear_leftovers(dir.path()).is_empty());
        assert!(dir.path().join(RND_FILE).exists());
        let second = TempFile::create(dir.path(), RND_FILE).err().unwrap();
        let why = std::error::Error::source(&second).unwrap().to_string();
        assert!(
            why.starts_with("another dyno machine is writing it"),
            "{second}: {why}"
        );
        drop(live);
        assert!(!dir.path().join(RND_FILE).exists());
    }

    #[test]
    fn files_are_removed_after_use_and_on_drop() {
        let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context {
            base_path: dir.path().to_path_buf(),
            ..Context::for_tests()
        };
        for bench in [&DiskSeqWrite as &dyn Benchmark, &DiskRndWrite] {
            let mut w = bench.prepare(&ctx).unwrap();
            w.iterate().unwrap();
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
            drop(w);
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn the_registry_removes_files_that_are_still_open() {
        let _turn = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let ctx = Context {
            base_path: dir.path().to_path_buf(),
            ..Context::for_tests()
        };
        let w = DiskSeqWrite.prepare(&ctx).unwrap();
        assert!(dir.path().join(SEQ_FILE).exists());
        remove_temp_files();
        assert!(!dir.path().join(SEQ_FILE).exists());
        drop(w);
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let ctx = Context {
            base_path: PathBuf::from("/nonexistent/dyno-test"),
            ..Context::for_tests()
        };
        let err = DiskSeqWrite.prepare(&ctx).err().unwrap().to_string();
        assert!(err.contains("/nonexistent/dyno-test"), "{err}");
    }
}
