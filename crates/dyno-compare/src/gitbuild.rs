//! Subjects given as a git revision of a Cargo project: extract the revision with
//! `git archive` (the user's repository and work tree are never touched), build it with
//! `cargo build --release` into a target directory of its own per commit, and run the
//! binary. Extracted sources and builds are kept in a cache directory, so a revision is
//! built once across comparisons.

use crate::spec::{ComparisonFile, GitSource};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why a revision could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// git failed (extracting the revision).
    #[error("subject `{subject}`: {message}")]
    Git {
        /// The subject.
        subject: String,
        /// What failed.
        message: String,
    },
    /// cargo failed.
    #[error("subject `{subject}`: `cargo build` of {rev} ({commit}) failed ({status}); last output:\n    {}", tail.join("\n    "))]
    Cargo {
        /// The subject.
        subject: String,
        /// The revision as written.
        rev: String,
        /// The commit.
        commit: String,
        /// cargo's exit status.
        status: String,
        /// cargo's last output lines.
        tail: Vec<String>,
    },
}

/// What git, tar or a manifest said when a revision could not be found or extracted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GitFailure(pub String);

impl From<String> for GitFailure {
    fn from(what: String) -> Self {
        GitFailure(what)
    }
}

impl From<&str> for GitFailure {
    fn from(what: &str) -> Self {
        GitFailure(what.to_string())
    }
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GitFailure> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn repo_of(g: &GitSource) -> Result<(PathBuf, PathBuf), GitFailure> {
    let manifest = g
        .manifest
        .canonicalize()
        .map_err(|e| format!("manifest {}: {e}", g.manifest.display()))?;
    let dir = manifest.parent().unwrap_or(Path::new("/")).to_path_buf();
    let root = PathBuf::from(git(&dir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        format!(
            "manifest {} is not in a git work tree: {e}",
            g.manifest.display()
        )
    })?);
    let rel = manifest
        .strip_prefix(&root)
        .map_err(|_| {
            format!(
                "manifest {} is outside its repository",
                g.manifest.display()
            )
        })?
        .to_path_buf();
    Ok((root, rel))
}

/// The commit `g.rev` names, checked before anything starts.
pub fn resolve(g: &GitSource) -> Result<String, GitFailure> {
    let (root, _) = repo_of(g)?;
    git(
        &root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{}^{{commit}}", g.rev),
        ],
    )
    .map_err(|_| {
        GitFailure(format!(
            "rev `{}` is not a commit of the repository of {}",
            g.rev,
            g.manifest.display()
        ))
    })
}

/// The default cache: `$XDG_CACHE_HOME/dyno/compare`, else `~/.cache/dyno/compare`, else
/// the temporary directory.
pub fn default_cache() -> PathBuf {
    let non_empty = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    non_empty("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| non_empty("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("dyno")
        .join("compare")
}

/// Extracts and builds one revision; returns the binary.
pub fn build(subject: &str, g: &GitSource, cache: &Path) -> Result<PathBuf, BuildError> {
    let git_err = |failure: GitFailure| BuildError::Git {
        subject: subject.into(),
        message: failure.0,
    };
    let (root, rel) = repo_of(g).map_err(git_err)?;
    let short = &g.commit[..g.commit.len().min(12)];
    let src = cache.join(format!("src-{short}"));
    let done = src.join(".dyno-extracted");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&src)
            .map_err(|e| git_err(format!("{}: {e}", src.display()).into()))?;
        extract(&root, &g.commit, &src).map_err(git_err)?;
        std::fs::write(&done, &g.commit)
            .map_err(|e| git_err(format!("{}: {e}", done.display()).into()))?;
    }
    let manifest = src.join(&rel);
    let target = cache.join(format!("target-{short}"));
    let mut cmd = Command::new("cargo");
    cmd.args(["build", "--release", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .stdin(Stdio::null());
    if let Some(p) = &g.package {
        cmd.args(["-p", p]);
    }
    if let Some(b) = &g.bin {
        cmd.args(["--bin", b]);
    }
    let out = cmd
        .output()
        .map_err(|e| git_err(format!("cannot run cargo: {e}").into()))?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        return Err(BuildError::Cargo {
            subject: subject.into(),
            rev: g.rev.clone(),
            commit: g.commit.clone(),
            status: out.status.to_string(),
            tail: lines[lines.len().saturating_sub(20)..].to_vec(),
        });
    }
    let name = match g.bin.clone().or_else(|| g.package.clone()) {
        Some(n) => n,
        None => package_name(&manifest).map_err(git_err)?,
    };
    let binary = target.join("release").join(name);
    if !binary.is_file() {
        return Err(git_err(
            format!(
                "cargo built {} but {} is missing: name the binary with `bin`",
                g.rev,
                binary.display()
            )
            .into(),
        ));
    }
    Ok(binary)
}

fn extract(root: &Path, commit: &str, into: &Path) -> Result<(), GitFailure> {
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git archive: {e}"))?;
    let stdout = archive.stdout.take().ok_or("git archive has no output")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(into)
        .stdin(Stdio::from(stdout))
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let git_status = archive.wait().map_err(|e| e.to_string())?;
    if !git_status.success() || !tar.status.success() {
        return Err(format!(
            "extracting {commit} failed: {}",
            String::from_utf8_lossy(&tar.stderr).trim()
        )
        .into());
    }
    Ok(())
}

fn package_name(manifest: &Path) -> Result<String, GitFailure> {
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let value: toml::Value =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    value
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| {
            GitFailure(format!(
                "{}: no [package] name; give `package` or `bin`",
                manifest.display()
            ))
        })
}

/// Builds every `git` subject of `cfg` (calling `starting(subject, rev, commit)` before
/// each) and puts its binary in front of its arguments.
pub fn build_all(
    cfg: &mut ComparisonFile,
    cache: &Path,
    mut starting: impl FnMut(&str, &str, &str),
) -> Result<(), BuildError> {
    for s in cfg.subjects.iter_mut() {
        let Some(g) = s.git.clone() else { continue };
        starting(&s.name, &g.rev, &g.commit);
        let binary = build(&s.name, &g, cache)?;
        s.command.insert(0, binary.display().to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    #[test]
    fn builds_each_revision_of_a_cargo_project() {
        let repo = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let dir = repo.path();
        std::fs::create_dir_all(dir.join("node/src")).unwrap();
        std::fs::write(
            dir.join("node/Cargo.toml"),
            "[package]\nname = \"toy-node\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
        )
        .unwrap();
        let main = |v: &str| format!("fn main() {{ println!(\"{v}\"); }}\n");
        std::fs::write(dir.join("node/src/main.rs"), main("v1")).unwrap();
        let git = "git -c user.email=t@example.invalid -c user.name=t";
        sh(
            dir,
            &format!("git init -q . && git add -A && {git} commit -qm v1 && {git} tag v1"),
        );
        std::fs::write(dir.join("node/src/main.rs"), main("v2")).unwrap();
        sh(dir, &format!("git add -A && {git} commit -qm v2"));
        // Uncommitted work must not leak into a build.
        std::fs::write(dir.join("node/src/main.rs"), main("dirty")).unwrap();

        let text = format!(
            "[[subject]]\nname = \"old\"\ngit = {{ manifest = \"{m}\", rev = \"v1\" }}\nargs = [\"--x\"]\n\
             [[subject]]\nname = \"new\"\ngit = {{ manifest = \"{m}\", rev = \"HEAD\" }}\n\
             [[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n",
            m = dir.join("node/Cargo.toml").display()
        );
        let mut cfg = ComparisonFile::parse(&text, Path::new("c.toml")).unwrap();
        assert_eq!(cfg.subjects[0].command, ["--x"]);
        let mut started = Vec::new();
        build_all(&mut cfg, cache.path(), |s, rev, _| {
            started.push(format!("{s}@{rev}"))
        })
        .unwrap();
        assert_eq!(started, ["old@v1", "new@HEAD"]);
        let run = |bin: &str| {
            let out = Command::new(bin).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(run(&cfg.subjects[0].command[0]), "v1\n");
        assert_eq!(cfg.subjects[0].command[1], "--x");
        assert_eq!(run(&cfg.subjects[1].command[0]), "v2\n");

        let bad = text.replace("rev = \"v1\"", "rev = \"v9\"");
        let e = ComparisonFile::parse(&bad, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml:3:1: key `subject[0].git`: rev `v9` is not a commit"),
            "{e}"
        );
    }
}
