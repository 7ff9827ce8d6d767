//! Built revisions, kept per commit and build settings, so a revision is built once
//! across comparisons and bisects, and a revision that does not build is not tried
//! again.
//!
//! Layout under the cache directory, `<key>` the [`BuildSettings`] fingerprint:
//!
//! ```text
//! <key>/settings.json          the recipe, for people
//! <key>/target/                cargo's target directory, shared by the commits
//! <key>/<commit>/src/          the extracted revision ({src})
//! <key>/<commit>/out           the artifact ({out}: a file or directory)
//! <key>/<commit>/build.log     the build's whole output
//! <key>/<commit>/build.json    the record: ok or failed, status, last lines, seconds
//! ```
//!
//! The record is written last, once the build ended (a build stopped by Ctrl-C leaves
//! none, and its half-written artifact is removed before the next try); a build extracts
//! its revision afresh, into a temporary directory renamed into place. A failed build's record is kept: the same commit with
//! the same settings fails again from the cache ([`FailedBuild::cached`]), as `git bisect
//! skip` remembers a commit that cannot be tested. Delete `<key>/<commit>` to try again.

use crate::error::{BuildError, FailedBuild};
use crate::git::Repo;
use crate::recipe::{fill, BuildSettings, Recipe};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The directory built revisions are kept in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildCache {
    dir: PathBuf,
}

/// A built revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// The commit.
    pub commit: String,
    /// The program to run (the recipe's `bin`, filled).
    pub program: PathBuf,
    /// The artifact (`{out}`).
    pub out: PathBuf,
    /// The extracted revision (`{src}`).
    pub src: PathBuf,
    /// Seconds the build took (when it ran; the original build's when reused).
    pub seconds: f64,
    /// Taken from the cache, not built now.
    pub reused: bool,
}

/// `build.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    commit: String,
    ok: bool,
    command: String,
    status: String,
    tail: Vec<String>,
    seconds: f64,
    program: PathBuf,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The default cache: `$XDG_CACHE_HOME/dyno/builds`, else `~/.cache/dyno/builds`, else
/// the temporary directory.
pub fn default_dir() -> PathBuf {
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
        .join("builds")
}

impl BuildCache {
    /// The cache in `dir` (created when the first build is kept).
    pub fn new(dir: impl Into<PathBuf>) -> BuildCache {
        BuildCache { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn commit_dir(&self, settings: &BuildSettings, commit: &str) -> PathBuf {
        self.dir.join(&settings.key).join(commit)
    }

    /// What the cache knows of `commit` under `settings` without building: its artifact,
    /// its failure, or `None` (not built yet, or its artifact is gone).
    pub fn lookup(
        &self,
        settings: &BuildSettings,
        commit: &str,
    ) -> Option<Result<Artifact, FailedBuild>> {
        let dir = self.commit_dir(settings, commit);
        let text = std::fs::read_to_string(dir.join("build.json")).ok()?;
        let r: Record = serde_json::from_str(&text).ok()?;
        if r.commit != commit {
            return None;
        }
        if !r.ok {
            return Some(Err(FailedBuild {
                commit: r.commit,
                command: r.command,
                status: r.status,
                tail: r.tail,
                cached: true,
            }));
        }
        let out = dir.join("out");
        if !out.exists() || !r.program.exists() {
            return None;
        }
        Some(Ok(Artifact {
            commit: r.commit,
            program: r.program,
            out,
            src: dir.join("src"),
            seconds: r.seconds,
            reused: true,
        }))
    }

    /// The artifact of `commit` built with `settings`: from the cache, or extracted and
    /// built now (a guarded child, stopped when `stop` is set). A failed build is
    /// [`BuildError::Failed`], recorded so the next call fails at once.
    pub fn build(
        &self,
        repo: &Repo,
        commit: &str,
        settings: &BuildSettings,
        stop: &AtomicBool,
    ) -> Result<Artifact, BuildError> {
        if let Some(known) = self.lookup(settings, commit) {
            return known.map_err(BuildError::Failed);
        }
        let dir = self.commit_dir(settings, commit);
        self.describe_settings(settings)?;
        let src = extracted(repo, commit, &dir)?;
        let out = dir.join("out");
        remove_any(&out)?;
        let log = dir.join("build.log");
        std::fs::File::create(&log).map_err(io(&log))?;
        let (command, run, program) = match &settings.recipe {
            Recipe::Command(c) => {
                let line = c.filled(&src, &out);
                let mut cmd = std::process::Command::new(&line[0]);
                cmd.args(&line[1..]).current_dir(&src);
                let run = crate::process::run_guarded(cmd, Some(&log), stop)?;
                let program = PathBuf::from(fill(c.bin(), &src, &out));
                (line.join(" "), run, program)
            }
            Recipe::Cargo(c) => {
                let target = self.dir.join(&settings.key).join("target");
                crate::revision_cargo::build(c, &src, &target, &out, &log, stop)?
            }
        };
        let mut record = Record {
            commit: commit.to_string(),
            ok: run.ok,
            command,
            status: run.status,
            tail: run.tail,
            seconds: run.seconds,
            program,
        };
        if record.ok && !(out.exists() && record.program.exists()) {
            record.ok = false;
            record.status = format!(
                "it exited 0 but left no {}",
                if out.exists() {
                    record.program.display().to_string()
                } else {
                    format!("{{out}} ({})", out.display())
                }
            );
        }
        save(&dir.join("build.json"), &record)?;
        if !record.ok {
            return Err(BuildError::Failed(FailedBuild {
                commit: record.commit,
                command: record.command,
                status: record.status,
                tail: record.tail,
                cached: false,
            }));
        }
        Ok(Artifact {
            commit: record.commit,
            program: record.program,
            out,
            src,
            seconds: record.seconds,
            reused: false,
        })
    }

    /// Writes `<key>/settings.json` once, so a person can tell the cache's builds apart.
    fn describe_settings(&self, settings: &BuildSettings) -> Result<(), BuildError> {
        let path = self.dir.join(&settings.key).join("settings.json");
        if path.exists() {
            return Ok(());
        }
        let dir = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let text = serde_json::to_string_pretty(&settings.recipe).expect("serializable");
        std::fs::write(&path, text).map_err(io(&path))
    }
}

/// `<dir>/src`, extracted now. Always afresh, with the files' times set to now: cargo
/// recognises an unchanged source by its modification time, and `git archive` would
/// give every commit's files their commit's time, older than the shared target
/// directory's last build, which would then be taken for this commit's.
fn extracted(repo: &Repo, commit: &str, dir: &Path) -> Result<PathBuf, BuildError> {
    let src = dir.join("src");
    let tmp = dir.join(format!("src.tmp-{}", std::process::id()));
    remove_any(&tmp)?;
    remove_any(&src)?;
    std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
    repo.extract(commit, &tmp)?;
    std::fs::rename(&tmp, &src).map_err(io(&src))?;
    Ok(src)
}

fn remove_any(path: &Path) -> Result<(), BuildError> {
    match std::fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).map_err(io(path)),
        Ok(_) => std::fs::remove_file(path).map_err(io(path)),
    }
}

fn save(path: &Path, record: &Record) -> Result<(), BuildError> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(record).expect("serializable");
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::tests::{sh, GIT};
    use crate::recipe::BuildCommand;

    fn settings(script: &str) -> BuildSettings {
        let argv = vec!["sh".into(), "-c".into(), script.into()];
        BuildSettings::new(Recipe::Command(BuildCommand::new(argv, None).unwrap())).unwrap()
    }

    #[test]
    fn each_revision_is_built_once_and_a_failure_is_remembered() {
        let repo_dir = tempfile::tempdir().unwrap();
        let d = repo_dir.path();
        sh(d, "git init -q .");
        std::fs::write(d.join("node.sh"), "#!/bin/sh\necho v1\n").unwrap();
        sh(
            d,
            &format!("git add -A && {GIT} commit -qm v1 && git tag v1"),
        );
        std::fs::write(d.join("node.sh"), "#!/bin/sh\necho v2\n").unwrap();
        std::fs::write(d.join("broken"), "").unwrap();
        sh(
            d,
            &format!("git add -A && {GIT} commit -qm v2 && git tag v2"),
        );
        let repo = Repo::open(d).unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = BuildCache::new(cache_dir.path());
        // Counts its runs beside the cache, so a second build of a commit shows.
        let runs = cache_dir.path().join("runs");
        let s = settings(&format!(
            "echo run >> {}; test ! -e broken || {{ echo 'broken: no'; exit 7; }}; cp node.sh {{out}} && chmod +x {{out}}",
            runs.display()
        ));
        let stop = AtomicBool::new(false);
        let v1 = repo.resolve("v1").unwrap();
        let a = cache.build(&repo, &v1, &s, &stop).unwrap();
        assert!(!a.reused);
        let out = std::process::Command::new(&a.program).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "v1\n");
        let again = cache.build(&repo, &v1, &s, &stop).unwrap();
        assert!(again.reused);
        assert_eq!(again.program, a.program);

        let v2 = repo.resolve("v2").unwrap();
        let e = cache.build(&repo, &v2, &s, &stop).unwrap_err();
        let f = e.failed().expect("a failed build").clone();
        assert!(!f.cached);
        assert_eq!(f.tail, ["broken: no"]);
        assert!(f.status.contains('7'), "{}", f.status);
        let e = cache.build(&repo, &v2, &s, &stop).unwrap_err();
        assert!(e.failed().unwrap().cached, "{e}");
        assert!(e.to_string().contains("[an earlier build, cached]"), "{e}");
        let ran = std::fs::read_to_string(&runs).unwrap();
        assert_eq!(ran.lines().count(), 2, "v1 once, v2 once");

        // Other settings are another build of the same commit.
        let other = settings("cp node.sh {out}; chmod +x {out}");
        assert!(!cache.build(&repo, &v1, &other, &stop).unwrap().reused);
        assert!(cache.lookup(&other, &v2).is_none());
    }

    #[test]
    fn a_build_that_leaves_no_artifact_or_is_interrupted_is_not_kept() {
        let repo_dir = tempfile::tempdir().unwrap();
        let d = repo_dir.path();
        sh(d, "git init -q . && touch x");
        sh(d, &format!("git add -A && {GIT} commit -qm one"));
        let repo = Repo::open(d).unwrap();
        let commit = repo.resolve("HEAD").unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = BuildCache::new(cache_dir.path());
        let e = cache
            .build(
                &repo,
                &commit,
                &settings("echo {out} > /dev/null"),
                &AtomicBool::new(false),
            )
            .unwrap_err();
        let f = e.failed().expect("failed");
        assert!(f.status.starts_with("it exited 0 but left no {out}"), "{e}");

        let slow = settings("touch {out}; sleep 30");
        let e = cache
            .build(&repo, &commit, &slow, &AtomicBool::new(true))
            .unwrap_err();
        assert!(matches!(e, BuildError::Interrupted), "{e}");
        assert!(cache.lookup(&slow, &commit).is_none(), "nothing recorded");
    }
}
