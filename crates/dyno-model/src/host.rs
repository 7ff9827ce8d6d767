//! The host fingerprint: what machine a number was measured on.
//!
//! Everything is read from `/proc` and `/sys` (Linux); a field that cannot be read is
//! left empty rather than guessed, so a fingerprint never claims more than it saw.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Finds the filesystem holding `dir` from `/proc/self/mountinfo`.
    pub fn of(dir: &Path) -> Option<Filesystem> {
        let canonical = std::fs::canonicalize(dir).ok()?;
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mut fs = Self::from_mountinfo(&canonical, &mountinfo)?;
        fs.path = dir.to_path_buf();
        Some(fs)
    }

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
    /// Reads the fingerprint of this machine; `dir` is the directory whose filesystem is
    /// recorded (the disk-benchmark directory, or the working directory).
    pub fn probe(dir: &Path) -> Host {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo_field(&cpuinfo, "model name")
            .or_else(|| cpuinfo_field(&cpuinfo, "Processor"))
            .or_else(|| cpuinfo_field(&cpuinfo, "cpu model"))
            .unwrap_or_default();
        let mut cpu_flags: Vec<String> = cpuinfo_field(&cpuinfo, "flags")
            .or_else(|| cpuinfo_field(&cpuinfo, "Features"))
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        cpu_flags.sort();
        cpu_flags.dedup();
        let cores_online = parse_cpu_list(read("/sys/devices/system/cpu/online").trim())
            .map(|v| v.len())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(0, |n| n.get()));
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024);
        let virtualization = detect_virtualization(&cpu_flags);
        Host {
            hostname: dyno_proc::procfs::hostname().unwrap_or_default(),
            cpu_model,
            cpu_flags,
            cores_online,
            memory_bytes,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            virtualization,
            filesystem: Filesystem::of(dir),
        }
    }

    /// True when the CPU reports the named feature flag (e.g. `sha_ni`, `avx512ifma`).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.cpu_flags
            .binary_search_by(|f| f.as_str().cmp(flag))
            .is_ok()
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// What the machine runs under: a hypervisor (from DMI and the CPU's hypervisor flag) and
/// a container, when either is visible.
fn detect_virtualization(cpu_flags: &[String]) -> Option<String> {
    let mut parts = Vec::new();
    let vendor = read("/sys/class/dmi/id/sys_vendor").trim().to_string();
    let product = read("/sys/class/dmi/id/product_name").trim().to_string();
    let dmi = format!("{vendor} {product}").to_lowercase();
    let known = [
        ("kvm", "KVM"),
        ("qemu", "QEMU"),
        ("vmware", "VMware"),
        ("virtualbox", "VirtualBox"),
        ("microsoft corporation virtual", "Hyper-V"),
        ("xen", "Xen"),
        ("amazon ec2", "Amazon EC2"),
        ("google compute engine", "Google Compute Engine"),
        ("firecracker", "Firecracker"),
        ("cloud hypervisor", "Cloud Hypervisor"),
    ];
    if let Some((_, name)) = known.iter().find(|(k, _)| dmi.contains(k)) {
        parts.push(name.to_string());
    } else if cpu_flags.iter().any(|f| f == "hypervisor") {
        parts.push(if vendor.is_empty() {
            "hypervisor (unknown)".to_string()
        } else {
            format!("hypervisor ({vendor})")
        });
    }
    if Path::new("/.dockerenv").exists() {
        parts.push("container (docker)".into());
    } else if Path::new("/run/.containerenv").exists() {
        parts.push("container (podman)".into());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Parses a Linux CPU list (`0-3,8,10-11`) into CPU indices.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return None;
    }
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                if b < a {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// Share of all CPU time that was busy (not idle or iowait) over `window`, from
/// `/proc/stat`; `None` when it cannot be read. Used to warn that a machine is not quiet.
pub fn cpu_busy_fraction(window: Duration) -> Option<f64> {
    let t0 = dyno_proc::procfs::host_cpu_ticks()?;
    std::thread::sleep(window);
    let t1 = dyno_proc::procfs::host_cpu_ticks()?;
    let dt = t1.total.saturating_sub(t0.total);
    if dt == 0 {
        return Some(0.0);
    }
    Some(1.0 - (t1.idle.saturating_sub(t0.idle)) as f64 / dt as f64)
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

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), None);
    }

    #[test]
    fn probing_this_machine_fills_the_basics() {
        let host = Host::probe(Path::new("."));
        assert!(host.cores_online >= 1);
        assert!(host.memory_bytes >= 1 << 20);
        assert!(!host.kernel.is_empty());
        let sorted = host.cpu_flags.windows(2).all(|w| w[0] < w[1]);
        assert!(sorted, "flags are sorted and unique for has_flag");
    }
}
