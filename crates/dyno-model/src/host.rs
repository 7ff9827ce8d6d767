//! The host fingerprint: what machine a number was measured on.
//!
//! The types and the pure parsing of mount tables live here; reading `/proc` and `/sys`
//! to fill them is `dyno_proc::host`'s job, so the shared vocabulary imports no
//! workspace crate.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A fingerprint of the machine a run measured on.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Host {
    /// Host name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// CPU model name as the kernel reports it.
    pub cpu_model: String,
    /// CPU feature flags, sorted.
    pub cpu_flags: Vec<String>,
    /// Logical CPUs online.
    pub cores_online: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Hypervisor or container the process runs under, if any was detected.
    pub virtualization: Option<String>,
    /// Filesystem of the working (or disk-benchmark) directory.
    pub filesystem: Option<Filesystem>,
}

/// The filesystem a directory lives on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filesystem {
    /// The directory that was asked about.
    pub path: PathBuf,
    /// Mount point that holds it.
    pub mount_point: PathBuf,
    /// Filesystem type as the kernel names it (`ext4`, `tmpfs`, `overlay`, `nfs4`...).
    pub fs_type: String,
    /// Backing device or source.
    pub source: String,
}

/// What a filesystem type means for disk benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    /// Backed by a block device: disk numbers mean something.
    Disk,
    /// Lives in RAM (tmpfs, ramfs): disk numbers measure memory.
    Memory,
    /// A union filesystem (overlayfs): numbers include copy-up costs.
    Overlay,
    /// Over the network: numbers measure the network and the server.
    Network,
}

impl Filesystem {
    /// The longest mount point that is a prefix of `path` in a mountinfo text (later
    /// mounts on the same point win, as they shadow earlier ones).
    pub fn from_mountinfo(path: &Path, mountinfo: &str) -> Option<Filesystem> {
        let mut best: Option<Filesystem> = None;
        for line in mountinfo.lines() {
            // id parent major:minor root mount_point options [optional...] - type source super
            let (left, right) = match line.split_once(" - ") {
                Some(p) => p,
                None => continue,
            };
            let fields: Vec<&str> = left.split(' ').collect();
            let rest: Vec<&str> = right.split(' ').collect();
            if fields.len() < 5 || rest.len() < 2 {
                continue;
            }
            let mount_point = PathBuf::from(unescape_mount(fields[4]));
            if !path.starts_with(&mount_point) {
                continue;
            }
            let deeper = best
                .as_ref()
                .map(|b| mount_point.as_os_str().len() >= b.mount_point.as_os_str().len())
                .unwrap_or(true);
            if deeper {
                best = Some(Filesystem {
                    path: path.to_path_buf(),
                    mount_point,
                    fs_type: rest[0].to_string(),
                    source: unescape_mount(rest[1]),
                });
            }
        }
        best
    }

    /// Classifies the filesystem type for disk benchmarks.
    pub fn kind(&self) -> FsKind {
        let t = self.fs_type.as_str();
        match t {
            "tmpfs" | "ramfs" | "devtmpfs" | "hugetlbfs" => FsKind::Memory,
            "overlay" | "overlayfs" | "aufs" | "unionfs" => FsKind::Overlay,
            "nfs" | "nfs4" | "cifs" | "smb3" | "smbfs" | "9p" | "ceph" | "glusterfs" | "afs"
            | "lustre" | "virtiofs" => FsKind::Network,
            _ if t.starts_with("fuse.sshfs") || t.starts_with("fuse.s3") => FsKind::Network,
            _ => FsKind::Disk,
        }
    }
}

/// Mount paths escape space, tab, newline and backslash as octal (`\040`).
fn unescape_mount(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            if let Some(v) = std::str::from_utf8(&bytes[i + 1..i + 4])
                .ok()
                .and_then(|oct| u8::from_str_radix(oct, 8).ok())
            {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Host {
    /// True when the CPU reports the named feature flag (e.g. `sha_ni`, `avx512ifma`).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.cpu_flags
            .binary_search_by(|f| f.as_str().cmp(flag))
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 0:26 / /dev/shm rw,nosuid,nodev shared:2 - tmpfs tmpfs rw
31 22 0:27 / /tmp rw shared:3 - tmpfs tmpfs rw
40 22 0:40 / /srv/my\\040data rw shared:4 - nfs4 server:/export rw
41 31 0:41 / /tmp/overlay rw - overlay overlay rw,lowerdir=/a
";

    #[test]
    fn longest_mount_prefix_wins() {
        let fs = Filesystem::from_mountinfo(Path::new("/tmp/x/y"), MOUNTINFO).unwrap();
        assert_eq!(fs.fs_type, "tmpfs");
        assert_eq!(fs.kind(), FsKind::Memory);
        let fs = Filesystem::from_mountinfo(Path::new("/tmp/overlay/z"), MOUNTINFO).unwrap();
        assert_eq!(fs.kind(), FsKind::Overlay);
        let fs = Filesystem::from_mountinfo(Path::new("/home/u"), MOUNTINFO).unwrap();
        assert_eq!((fs.fs_type.as_str(), fs.kind()), ("ext4", FsKind::Disk));
        // A path that merely shares a string prefix is not under the mount point.
        let fs = Filesystem::from_mountinfo(Path::new("/tmpfoo"), MOUNTINFO).unwrap();
        assert_eq!(fs.fs_type, "ext4");
    }

    #[test]
    fn escaped_mount_points_are_decoded() {
        let fs = Filesystem::from_mountinfo(Path::new("/srv/my data/db"), MOUNTINFO).unwrap();
        assert_eq!(fs.mount_point, PathBuf::from("/srv/my data"));
        assert_eq!(fs.kind(), FsKind::Network);
    }
}
