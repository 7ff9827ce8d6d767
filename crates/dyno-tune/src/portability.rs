//! Which machines a `target-cpu` build will not run on.
//!
//! `-C target-cpu=X` lets the compiler use every instruction of X anywhere in the binary;
//! on a CPU without one of them the binary dies with "illegal instruction". The features
//! a build assumes are the difference between `rustc --print cfg` with and without the
//! flag (the target's default CPU, `x86-64` on x86_64 Linux), which the compiler itself
//! reports, so no table here can go stale. The nearest portable level (`x86-64-v2/v3/v4`)
//! covering them tells a reader which machines are safe.

use crate::error::TuneError;
use serde::Serialize;
use std::collections::BTreeSet;
use std::process::Command;

/// What a variant's `target-cpu` assumes of the machine that runs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuAssumption {
    /// The `-C target-cpu` value (`native`, `znver4`, `x86-64-v3`).
    pub target_cpu: String,
    /// Target features enabled beyond the target's default CPU, sorted.
    pub features: Vec<String>,
    /// The lowest of `x86-64-v2`, `-v3`, `-v4` that has them all (x86_64 only; `None`
    /// when even v4 lacks some: the binary needs this CPU family).
    pub portable_level: Option<String>,
    /// Assumed features this machine lacks (non-empty: the binary cannot run here).
    pub missing_here: Vec<String>,
}

impl CpuAssumption {
    /// One sentence for the report.
    pub fn describe(&self, label: &str) -> String {
        if self.features.is_empty() {
            return format!(
                "{label}: target-cpu={} assumes nothing beyond the target's default CPU",
                self.target_cpu
            );
        }
        let level = match &self.portable_level {
            Some(l) => format!("CPUs of level {l} or newer have them all"),
            None => "no x86-64-v2/v3/v4 level has them all: only this CPU family does".into(),
        };
        let here = if self.missing_here.is_empty() {
            String::new()
        } else {
            format!(
                "; THIS machine lacks {}, so the binary cannot run here",
                self.missing_here.join(", ")
            )
        };
        format!(
            "{label}: target-cpu={} assumes the CPU features {}; it will not run (illegal instruction) on a machine without any one of them ({level}){here}",
            self.target_cpu,
            self.features.join(", ")
        )
    }
}

/// `target_feature="..."` values of `rustc --print cfg` for `cpu` (`None`: no flag).
pub fn target_features(
    toolchain: Option<&str>,
    cpu: Option<&str>,
) -> Result<BTreeSet<String>, TuneError> {
    let mut cmd = Command::new("rustc");
    cmd.env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTFLAGS");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.args(["--print", "cfg"]);
    if let Some(c) = cpu {
        cmd.arg(format!("-Ctarget-cpu={c}"));
    }
    Ok(parse_features(&crate::toolchain::tool(&mut cmd)?))
}

/// The CPU names `rustc --print target-cpus` accepts for `toolchain`'s host target.
pub fn known_cpus(toolchain: Option<&str>) -> Result<BTreeSet<String>, TuneError> {
    let mut cmd = Command::new("rustc");
    cmd.env_remove("RUSTUP_TOOLCHAIN").env_remove("RUSTC");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.args(["--print", "target-cpus"]);
    let line = format!("{cmd:?}").replace('"', "");
    let out = cmd.output().map_err(|e| TuneError::Tool {
        command: line.clone(),
        message: e.to_string(),
    })?;
    Ok(parse_cpus(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_cpus(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with(char::is_whitespace))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Refuses a named `target_cpu` the compiler does not know: rustc only warns and builds
/// for the default CPU, so a typo (`x86-64-v5`) would race a variant that is not what its
/// label says.
pub fn check_target_cpus(study: &crate::Study) -> Result<(), TuneError> {
    let named: Vec<&str> = study
        .matrix
        .target_cpu
        .iter()
        .filter_map(|c| match c {
            crate::profile::TargetCpu::Named(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    let toolchains: Vec<Option<&str>> = if study.matrix.toolchain.is_empty() {
        vec![None]
    } else {
        study
            .matrix
            .toolchain
            .iter()
            .map(|t| Some(t.as_str()))
            .collect()
    };
    for t in toolchains {
        let known = known_cpus(t)?;
        if known.is_empty() {
            continue;
        }
        if let Some(bad) = named.iter().find(|n| !known.contains(**n)) {
            return Err(TuneError::Project {
                manifest: study.path.clone(),
                message: format!(
                    "matrix `target_cpu`: {bad:?} is not a CPU rustc{} knows (`rustc --print target-cpus`; portable levels: x86-64-v2, x86-64-v3, x86-64-v4)",
                    t.map(|t| format!(" +{t}")).unwrap_or_default()
                ),
            });
        }
    }
    Ok(())
}

fn parse_features(cfg: &str) -> BTreeSet<String> {
    cfg.lines()
        .filter_map(|l| l.strip_prefix("target_feature=\""))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect()
}

fn is_x86_64(toolchain: Option<&str>) -> bool {
    let mut cmd = Command::new("rustc");
    cmd.env_remove("RUSTUP_TOOLCHAIN");
    if let Some(t) = toolchain {
        cmd.arg(format!("+{t}"));
    }
    cmd.args(["--print", "cfg"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("target_arch=\"x86_64\""))
        .unwrap_or(false)
}

/// What building with `-C target-cpu=<cpu>` on `toolchain` assumes (see the module docs).
pub fn assumption(toolchain: Option<&str>, cpu: &str) -> Result<CpuAssumption, TuneError> {
    let base = target_features(toolchain, None)?;
    let with = target_features(toolchain, Some(cpu))?;
    let features: Vec<String> = with.difference(&base).cloned().collect();
    let here = target_features(toolchain, Some("native"))?;
    let missing_here = features
        .iter()
        .filter(|f| !here.contains(*f))
        .cloned()
        .collect();
    let mut portable_level = None;
    if is_x86_64(toolchain) {
        for level in ["x86-64-v2", "x86-64-v3", "x86-64-v4"] {
            let l = target_features(toolchain, Some(level))?;
            if features.iter().all(|f| l.contains(f)) {
                portable_level = Some(level.to_string());
                break;
            }
        }
    }
    Ok(CpuAssumption {
        target_cpu: cpu.to_string(),
        features,
        portable_level,
        missing_here,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_names_are_read_from_print_target_cpus() {
        let cpus = parse_cpus("Available CPUs for this target:\n    native                  - Select the CPU (currently znver4).\n    x86-64-v3\n    znver4\n\nAvailable features...\n");
        assert!(cpus.contains("x86-64-v3") && cpus.contains("znver4") && cpus.contains("native"));
        assert!(!cpus.contains("Available"));
    }

    #[test]
    fn features_are_read_from_print_cfg() {
        let f = parse_features(
            "debug_assertions\ntarget_arch=\"x86_64\"\ntarget_feature=\"sse2\"\ntarget_feature=\"avx2\"\n",
        );
        assert_eq!(
            f.into_iter().collect::<Vec<_>>(),
            ["avx2".to_string(), "sse2".to_string()]
        );
    }

    #[test]
    fn a_v3_build_assumes_avx2_and_v3_covers_it() {
        if !is_x86_64(None) {
            return;
        }
        let a = assumption(None, "x86-64-v3").unwrap();
        assert!(a.features.contains(&"avx2".to_string()), "{a:?}");
        assert!(!a.features.contains(&"avx512f".to_string()), "{a:?}");
        assert!(!a.features.contains(&"sse2".to_string()), "baseline: {a:?}");
        assert_eq!(a.portable_level.as_deref(), Some("x86-64-v3"));
        let text = a.describe("o3/x86-64-v3");
        assert!(
            text.contains("avx2") && text.contains("illegal instruction"),
            "{text}"
        );
        let v2 = assumption(None, "x86-64-v2").unwrap();
        assert_eq!(v2.portable_level.as_deref(), Some("x86-64-v2"));
        assert!(!v2.features.contains(&"avx2".to_string()));
    }
}
