//! Checks before measuring: what would make the numbers meaningless or misleading.
//!
//! Problems that make a run impossible (a missing or read-only base path) are errors;
//! conditions that distort numbers (a RAM-backed disk directory, a hypervisor, a busy
//! CPU, fewer cores than parallel threads) are warnings the caller must show and record.

use crate::HwError;
use dyno_model::{FsKind, Host};
use std::fmt;
use std::path::Path;

/// A condition that distorts the numbers of this run.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The disk directory is on a filesystem whose numbers are not a disk's.
    DiskNotADisk {
        /// The directory.
        path: String,
        /// Filesystem type (`tmpfs`, `overlay`, `nfs4`...).
        fs_type: String,
        /// What it is instead.
        kind: FsKind,
    },
    /// Running under a hypervisor or in a container.
    Virtualized(String),
    /// The CPU was busy before the start.
    BusyCpu {
        /// Share of all CPU time that was busy (0..1).
        busy: f64,
    },
    /// The parallel benchmark runs more threads than there are cores online.
    FewerCoresThanThreads {
        /// Threads the benchmark runs.
        threads: usize,
        /// Cores online.
        cores: usize,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::DiskNotADisk {
                path,
                fs_type,
                kind,
            } => {
                let what = match kind {
                    FsKind::Memory => "RAM (tmpfs/ramfs): disk scores measure memory, not a disk",
                    FsKind::Overlay => "an overlay filesystem: disk scores include copy-up and layering costs",
                    FsKind::Network => "a network filesystem: disk scores measure the network and the server",
                    FsKind::Disk => "a disk",
                };
                write!(
                    f,
                    "the disk benchmark directory {path} is on {fs_type}, which is {what}; point --base-path at the node's database disk"
                )
            }
            Warning::Virtualized(v) => write!(
                f,
                "running under {v}: neighbours on the same host can move the scores from run to run"
            ),
            Warning::BusyCpu { busy } => write!(
                f,
                "the CPU was {:.0}% busy before the start: other work competes with the benchmarks",
                busy * 100.0
            ),
            Warning::FewerCoresThanThreads { threads, cores } => write!(
                f,
                "BLAKE2-256-Parallel-{threads} runs {threads} threads on {cores} online core(s): threads share cores, so the per-thread score is lower than on a machine with {threads} cores"
            ),
        }
    }
}

/// Share of busy CPU above which a machine is not quiet.
pub const BUSY_THRESHOLD: f64 = 0.10;

/// Warnings that follow from the host fingerprint and the planned run.
pub fn warnings(
    host: &Host,
    measures_disk: bool,
    parallel_threads: Option<usize>,
    busy: Option<f64>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    if measures_disk {
        if let Some(fs) = &host.filesystem {
            let kind = fs.kind();
            if kind != FsKind::Disk {
                out.push(Warning::DiskNotADisk {
                    path: fs.path.display().to_string(),
                    fs_type: fs.fs_type.clone(),
                    kind,
                });
            }
        }
    }
    if let Some(v) = &host.virtualization {
        out.push(Warning::Virtualized(v.clone()));
    }
    if let Some(b) = busy.filter(|b| *b > BUSY_THRESHOLD) {
        out.push(Warning::BusyCpu { busy: b });
    }
    if let Some(t) = parallel_threads.filter(|t| *t > host.cores_online) {
        out.push(Warning::FewerCoresThanThreads {
            threads: t,
            cores: host.cores_online,
        });
    }
    out
}

/// Checks that the disk directory exists, is a directory and is writable, by creating
/// and removing a probe file. The error names the directory.
pub fn check_base_path(dir: &Path) -> Result<(), HwError> {
    let path = dir.to_path_buf();
    let meta = std::fs::metadata(dir).map_err(|error| HwError::BasePathUnreadable {
        path: path.clone(),
        error,
    })?;
    if !meta.is_dir() {
        return Err(HwError::BasePathNotADirectory { path });
    }
    let probe = dir.join(format!(".dyno-write-probe-{}", std::process::id()));
    std::fs::write(&probe, b"dyno").map_err(|error| HwError::BasePathNotWritable {
        path: path.clone(),
        error,
    })?;
    std::fs::remove_file(&probe).map_err(|error| HwError::BasePathProbeLeft { path, error })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dyno_model::Filesystem;
    use std::path::PathBuf;

    fn host(fs_type: &str, virt: Option<&str>) -> Host {
        Host {
            cores_online: 2,
            virtualization: virt.map(str::to_string),
            filesystem: Some(Filesystem {
                path: PathBuf::from("/data"),
                mount_point: PathBuf::from("/"),
                fs_type: fs_type.into(),
                source: "x".into(),
            }),
            ..Host::default()
        }
    }

    #[test]
    fn ram_overlay_and_network_disks_are_named() {
        for (fs, needle) in [
            ("tmpfs", "RAM"),
            ("overlay", "overlay"),
            ("nfs4", "network"),
        ] {
            let w = warnings(&host(fs, None), true, None, None);
            assert_eq!(w.len(), 1, "{fs}");
            let text = w[0].to_string();
            assert!(text.contains(needle) && text.contains(fs), "{text}");
        }
        assert!(warnings(&host("ext4", None), true, None, None).is_empty());
        assert!(
            warnings(&host("tmpfs", None), false, None, None).is_empty(),
            "no disk metric, no warning"
        );
    }

    #[test]
    fn hypervisor_busy_cpu_and_thread_count_warn() {
        let w = warnings(&host("ext4", Some("KVM")), false, Some(8), Some(0.5));
        assert_eq!(w.len(), 3);
        assert!(w.iter().any(|x| x.to_string().contains("8 threads on 2")));
        assert!(w.iter().any(|x| x.to_string().contains("50% busy")));
        assert!(warnings(&host("ext4", None), false, Some(2), Some(0.05)).is_empty());
    }

    #[test]
    fn base_path_must_be_a_writable_directory() {
        let dir = tempfile::tempdir().unwrap();
        check_base_path(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "probe removed"
        );
        let missing = dir.path().join("nope");
        assert!(check_base_path(&missing)
            .unwrap_err()
            .to_string()
            .contains("nope"));
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(check_base_path(&file)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
    }
}
