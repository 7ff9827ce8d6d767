//! Probing the host: the fingerprint of this machine ([`Host`]) read from `/proc` and
//! `/sys` (Linux), the filesystem of a directory, the online CPUs and how busy the CPUs
//! are before a measurement starts.
//!
//! A field that cannot be read is left empty rather than guessed, so a fingerprint never
//! claims more than it saw. The types live in dyno-model (the shared vocabulary); the
//! reading lives here, beside the other readings of /proc.

use crate::procfs;
use dyno_model::{Filesystem, Host};
use std::path::Path;
use std::time::Duration;

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
        hostname: procfs::hostname().unwrap_or_default(),
        cpu_model,
        cpu_flags,
        cores_online,
        memory_bytes,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
        virtualization,
        filesystem: filesystem_of(dir),
    }
}

/// Finds the filesystem holding `dir` from `/proc/self/mountinfo`.
pub fn filesystem_of(dir: &Path) -> Option<Filesystem> {
    let canonical = std::fs::canonicalize(dir).ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut fs = Filesystem::from_mountinfo(&canonical, &mountinfo)?;
    fs.path = dir.to_path_buf();
    Some(fs)
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

/// Writes CPU indices (ascending) as a Linux CPU list, runs compacted: `0-3,6`; empty for
/// none. The inverse of [`parse_cpu_list`].
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// Parses a Linux CPU list (`0-3,8,10-11`) into CPU indices; `None` for an empty or
/// malformed list. dyno-tango's pinning reads the online CPUs with it too.
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return None;
    }
    for part in s.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                // A range of more than 65536 CPUs is a corrupt file, not a machine.
                if b < a || b - a > 1 << 16 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    Some(out)
}

/// The online CPUs (`/sys/devices/system/cpu/online`), or `None` when unreadable.
pub fn online_cpus() -> Option<Vec<usize>> {
    parse_cpu_list(
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()?
            .trim(),
    )
}

/// Share of all CPU time that was busy (not idle or iowait) over `window`, from
/// `/proc/stat`; `None` when it cannot be read. Used to warn that a machine is not quiet.
pub fn cpu_busy_fraction(window: Duration) -> Option<f64> {
    let t0 = procfs::host_cpu_ticks()?;
    std::thread::sleep(window);
    let t1 = procfs::host_cpu_ticks()?;
    let dt = t1.total.saturating_sub(t0.total);
    if dt == 0 {
        return Some(0.0);
    }
    Some(1.0 - (t1.idle.saturating_sub(t0.idle)) as f64 / dt as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("0-100000"), None);
    }

    #[test]
    fn probing_this_machine_fills_the_basics() {
        let host = probe(Path::new("."));
        assert!(host.cores_online >= 1);
        assert!(host.memory_bytes >= 1 << 20);
        assert!(!host.kernel.is_empty());
        let sorted = host.cpu_flags.windows(2).all(|w| w[0] < w[1]);
        assert!(sorted, "flags are sorted and unique for has_flag");
    }
}
