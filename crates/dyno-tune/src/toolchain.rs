//! The toolchain outside the study: finding the LLVM tools a profile-guided build needs
//! (the `llvm-profdata` of the compiler's own LLVM, since another LLVM cannot read its
//! raw profiles, and `llvm-bolt`), over the build layer's running of a tool and `rustc
//! -vV`. A leaf: it imports nothing of this crate but its error.

use crate::error::TuneError;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs a tool and returns its standard output; a failure names the command and ends
/// with its last lines of standard error.
pub(crate) fn tool(cmd: &mut Command) -> Result<String, TuneError> {
    Ok(dyno_build::toolchain::tool(cmd)?)
}

pub use dyno_build::toolchain::tail;

/// `rustc +TOOLCHAIN -vV`.
pub fn rustc_version(toolchain: Option<&str>) -> Result<String, TuneError> {
    Ok(dyno_build::toolchain::rustc_version(toolchain)?)
}

/// `LLVM version: 22.1.2` of `rustc -vV`.
pub fn llvm_version(rustc_vv: &str) -> Option<String> {
    rustc_vv
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .map(|v| v.trim().to_string())
}

/// The `host:` triple of `rustc -vV`.
pub fn host_triple(rustc_vv: &str) -> Option<String> {
    rustc_vv
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(|v| v.trim().to_string())
}

fn major(version: &str) -> &str {
    version.split('.').next().unwrap_or(version)
}

/// The LLVM version an LLVM tool reports (`LLVM version 22.1.8`, also behind a vendor
/// prefix such as `Debian LLVM version`). Older `llvm-profdata`s only answer `--version`
/// after a subcommand, so `merge --version` is asked too.
pub fn tool_llvm_version(tool: &Path) -> Option<String> {
    [&["--version"][..], &["merge", "--version"][..]]
        .iter()
        .find_map(|args| {
            let out = Command::new(tool).args(*args).output().ok()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let at = text.find("LLVM version ")? + "LLVM version ".len();
            let v: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            (!v.is_empty()).then_some(v)
        })
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn rustc_line(toolchain: Option<&str>) -> String {
    match toolchain {
        Some(t) => format!("rustc +{t}"),
        None => "rustc".into(),
    }
}

/// The `llvm-profdata` that reads what `toolchain`'s rustc writes: rustup's `llvm-tools`
/// in the toolchain's sysroot, else `llvm-profdata-<major>` or `llvm-profdata` on PATH
/// when its LLVM major version is the compiler's. A missing or mismatched tool is refused
/// with the command that installs the right one.
pub fn find_profdata(toolchain: Option<&str>, rustc_vv: &str) -> Result<PathBuf, TuneError> {
    let llvm = llvm_version(rustc_vv).ok_or_else(|| TuneError::PgoTools {
        toolchain: toolchain.unwrap_or("default").to_string(),
        message: "`rustc -vV` names no LLVM version".into(),
    })?;
    let host = host_triple(rustc_vv).unwrap_or_default();
    let mut sysroot_cmd = Command::new("rustc");
    sysroot_cmd
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC");
    if let Some(t) = toolchain {
        sysroot_cmd.arg(format!("+{t}"));
    }
    let sysroot = sysroot_cmd
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(root) = &sysroot {
        candidates.push(root.join(format!("lib/rustlib/{host}/bin/llvm-profdata")));
    }
    candidates.extend(on_path(&format!("llvm-profdata-{}", major(&llvm))));
    candidates.extend(on_path("llvm-profdata"));
    choose_profdata(&candidates, &llvm, toolchain)
}

/// The first of `candidates` (existing files) whose LLVM major version is `llvm`'s; else
/// the refusal naming the mismatched ones and the command that installs the right one.
pub fn choose_profdata(
    candidates: &[PathBuf],
    llvm: &str,
    toolchain: Option<&str>,
) -> Result<PathBuf, TuneError> {
    let err = |message: String| TuneError::PgoTools {
        toolchain: toolchain.unwrap_or("default").to_string(),
        message,
    };
    let mut mismatched = Vec::new();
    for c in candidates.iter().filter(|c| c.is_file()) {
        match tool_llvm_version(c) {
            Some(v) if major(&v) == major(llvm) => return Ok(c.clone()),
            Some(v) => mismatched.push(format!("{} is LLVM {v}", c.display())),
            None => mismatched.push(format!("{} reports no LLVM version", c.display())),
        }
    }
    let rustup = match toolchain {
        Some(t) => format!("rustup component add llvm-tools --toolchain {t}"),
        None => "rustup component add llvm-tools".into(),
    };
    let found = if mismatched.is_empty() {
        String::new()
    } else {
        format!(
            "; refused {} (profiles of LLVM {llvm} need an llvm-profdata of LLVM {})",
            mismatched.join(", "),
            major(llvm)
        )
    };
    Err(err(format!(
        "pgo needs the llvm-profdata of this compiler's LLVM {llvm} ({}): run `{rustup}` (or install LLVM {}'s, e.g. `apt-get install llvm-{}`){found}",
        rustc_line(toolchain),
        major(llvm),
        major(llvm),
    )))
}

/// `llvm-bolt` and `merge-fdata`: the pair of the compiler's LLVM major version if
/// installed (Debian's `bolt-<major>`), else the unsuffixed pair, else the newest
/// `llvm-bolt-<n>` on PATH with its `merge-fdata-<n>` (BOLT rewrites the linked ELF
/// binary, so its version need not match the compiler's).
pub fn find_bolt(toolchain: Option<&str>, rustc_vv: &str) -> Result<(PathBuf, PathBuf), TuneError> {
    let llvm = llvm_version(rustc_vv).unwrap_or_default();
    let m = major(&llvm).to_string();
    let pair = |suffix: &str| {
        Some((
            on_path(&format!("llvm-bolt{suffix}"))?,
            on_path(&format!("merge-fdata{suffix}"))?,
        ))
    };
    if let Some(p) = pair(&format!("-{m}")).or_else(|| pair("")) {
        return Ok(p);
    }
    let mut versions: Vec<u32> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|r| r.flatten())
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("llvm-bolt-")
                .and_then(|n| n.parse().ok())
        })
        .collect();
    versions.sort_unstable();
    if let Some(p) = versions.iter().rev().find_map(|n| pair(&format!("-{n}"))) {
        return Ok(p);
    }
    Err(TuneError::PgoTools {
        toolchain: toolchain.unwrap_or("default").to_string(),
        message: format!(
            "pgo \"on+bolt\" needs llvm-bolt and merge-fdata on PATH, and neither llvm-bolt-{m} nor llvm-bolt is there: install them (Debian: `apt-get install bolt-{m}`) or drop \"on+bolt\" from matrix.pgo"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUSTC: &str = "rustc 1.95.0 (59807616e 2026-04-14)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.95.0\nLLVM version: 22.1.2";

    #[test]
    fn versions_and_host_from_rustc() {
        assert_eq!(llvm_version(RUSTC).as_deref(), Some("22.1.2"));
        assert_eq!(
            host_triple(RUSTC).as_deref(),
            Some("x86_64-unknown-linux-gnu")
        );
        assert_eq!(major("22.1.2"), "22");
    }

    #[test]
    fn a_missing_or_mismatched_llvm_profdata_is_refused_with_the_fix() {
        let none = choose_profdata(&[], "22.1.2", Some("stable"))
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("rustup component add llvm-tools --toolchain stable"),
            "{none}"
        );
        assert!(none.contains("apt-get install llvm-22"), "{none}");
        assert!(none.starts_with("toolchain `stable`"), "{none}");
        // Whatever LLVM an installed llvm-profdata has, it is refused for a compiler of
        // LLVM 999 and named in the message.
        let installed: Vec<PathBuf> = ["/usr/bin/llvm-profdata", "/usr/bin/llvm-profdata-14"]
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .collect();
        if let Some(tool) = installed.first() {
            let e = choose_profdata(&installed, "999.0.0", None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("refused {}", tool.display())), "{e}");
            assert!(e.contains("rustup component add llvm-tools`"), "{e}");
            let v = tool_llvm_version(tool).expect("an LLVM version");
            assert_eq!(choose_profdata(&installed, &v, None).unwrap(), *tool);
        }
    }
}
