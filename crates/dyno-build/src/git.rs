//! The repository a build's revisions come from, read with `git` and never written: a
//! revision resolved to its commit, the commits between two revisions (`git rev-list
//! --ancestry-path`), a commit's subject line, author and date, and a revision extracted
//! with `git archive` into a directory of the cache, so the user's work tree, index and
//! branches are never touched (uncommitted work does not leak into a build).

use crate::error::GitError;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git repository (a work tree's top level, or a bare repository).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    root: PathBuf,
}

/// What `git log` says of one commit.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CommitInfo {
    /// The full hash.
    pub hash: String,
    /// The first line of its message.
    pub subject: String,
    /// `Name <email>`.
    pub author: String,
    /// The author date, ISO 8601 (`2026-11-25T10:12:00+01:00`).
    pub date: String,
}

fn git(dir: &Path, args: &[&str]) -> Result<String, GitError> {
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

impl Repo {
    /// The repository holding `path` (a directory or a file inside a work tree, or a bare
    /// repository's directory).
    pub fn open(path: &Path) -> Result<Repo, GitError> {
        let dir = if path.is_file() {
            path.parent().unwrap_or(Path::new("/"))
        } else {
            path
        };
        if !dir.is_dir() {
            return Err(format!("{}: no such directory", path.display()).into());
        }
        if let Ok(top) = git(dir, &["rev-parse", "--show-toplevel"]) {
            if !top.is_empty() {
                return Ok(Repo {
                    root: PathBuf::from(top),
                });
            }
        }
        match git(dir, &["rev-parse", "--is-bare-repository"]) {
            Ok(bare) if bare == "true" => Ok(Repo {
                root: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()),
            }),
            Ok(_) => Err(format!("{} is not in a git work tree", path.display()).into()),
            Err(e) => Err(format!("{} is not in a git repository: {e}", path.display()).into()),
        }
    }

    /// The work tree's top level (or the bare repository).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The commit `rev` names (a branch, tag, hash, `HEAD~3`).
    pub fn resolve(&self, rev: &str) -> Result<String, GitError> {
        let spec = format!("{rev}^{{commit}}");
        git(&self.root, &["rev-parse", "--verify", "--quiet", &spec]).map_err(|_| {
            GitError(format!(
                "rev `{rev}` is not a commit of the repository {}",
                self.root.display()
            ))
        })
    }

    /// Whether commit `a` is an ancestor of `b` (a commit is its own ancestor).
    pub fn is_ancestor(&self, a: &str, b: &str) -> Result<bool, GitError> {
        let status = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(["merge-base", "--is-ancestor", a, b])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run git: {e}"))?;
        match status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(format!("git merge-base --is-ancestor {a} {b} failed ({status})").into()),
        }
    }

    /// The commits after `good` up to and including `bad` that descend from `good`,
    /// oldest first (`git rev-list --ancestry-path --reverse good..bad`); with
    /// `first_parent`, only the main line (`--first-parent`): a merge is then one commit,
    /// the branch it merged is not walked.
    pub fn ancestry_path(
        &self,
        good: &str,
        bad: &str,
        first_parent: bool,
    ) -> Result<Vec<String>, GitError> {
        let range = format!("{good}..{bad}");
        let mut args = vec!["rev-list", "--ancestry-path", "--reverse"];
        if first_parent {
            args.push("--first-parent");
        }
        args.push(&range);
        Ok(git(&self.root, &args)?
            .lines()
            .map(str::to_string)
            .filter(|l| !l.is_empty())
            .collect())
    }

    /// Hash, subject line, author and date of `commit`.
    pub fn commit_info(&self, commit: &str) -> Result<CommitInfo, GitError> {
        let text = git(
            &self.root,
            &["log", "-1", "--format=%H%x00%s%x00%an <%ae>%x00%aI", commit],
        )?;
        let mut parts = text.splitn(4, '\0');
        let mut next = || parts.next().unwrap_or_default().to_string();
        Ok(CommitInfo {
            hash: next(),
            subject: next(),
            author: next(),
            date: next(),
        })
    }

    /// Writes the files of `commit` into `into` (an existing, empty directory) with `git
    /// archive | tar -x`, their modification times set to now (`tar -m`), not the
    /// commit's: a build tool that goes by times then sees every extraction as new.
    pub fn extract(&self, commit: &str, into: &Path) -> Result<(), GitError> {
        let mut archive = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(["archive", "--format=tar", commit])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run git archive: {e}"))?;
        let stdout = archive.stdout.take().ok_or("git archive has no output")?;
        let tar = Command::new("tar")
            .args(["-x", "-m"])
            .arg("-C")
            .arg(into)
            .stdin(Stdio::from(stdout))
            .output()
            .map_err(|e| format!("cannot run tar: {e}"))?;
        let archived = archive.wait_with_output().map_err(|e| e.to_string())?;
        if !archived.status.success() || !tar.status.success() {
            let why = [&archived.stderr, &tar.stderr]
                .iter()
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("; ");
            return Err(format!("extracting {commit} failed: {why}").into());
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const GIT: &str = "git -c user.email=t@example.invalid -c user.name=Tester";

    pub(crate) fn sh(dir: &Path, script: &str) {
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{script}");
    }

    /// A repository of `n` commits, each writing `v<i>` into `node.txt`, tagged `c<i>`.
    pub(crate) fn linear_repo(dir: &Path, n: usize) {
        sh(dir, "git init -q .");
        for i in 0..n {
            std::fs::write(dir.join("node.txt"), format!("v{i}\n")).unwrap();
            sh(
                dir,
                &format!("git add -A && {GIT} commit -qm 'step {i}' && git tag c{i}"),
            );
        }
    }

    #[test]
    fn the_commits_between_two_revisions_oldest_first_and_their_authors() {
        let dir = tempfile::tempdir().unwrap();
        linear_repo(dir.path(), 5);
        let repo = Repo::open(&dir.path().join("node.txt")).unwrap();
        let good = repo.resolve("c1").unwrap();
        let bad = repo.resolve("c4").unwrap();
        let list = repo.ancestry_path(&good, &bad, true).unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[2], bad);
        assert_eq!(list[0], repo.resolve("c2").unwrap());
        assert!(repo.is_ancestor(&good, &bad).unwrap());
        assert!(!repo.is_ancestor(&bad, &good).unwrap());
        let info = repo.commit_info(&list[0]).unwrap();
        assert_eq!(info.subject, "step 2");
        assert_eq!(info.author, "Tester <t@example.invalid>");
        assert_eq!(info.hash, list[0]);
        assert!(info.date.starts_with("20"), "{}", info.date);
        let e = repo.resolve("nope").unwrap_err().to_string();
        assert!(e.starts_with("rev `nope` is not a commit"), "{e}");

        // Uncommitted work never reaches an extraction.
        std::fs::write(dir.path().join("node.txt"), "dirty\n").unwrap();
        let into = tempfile::tempdir().unwrap();
        repo.extract(&good, into.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(into.path().join("node.txt")).unwrap(),
            "v1\n"
        );
        let outside = tempfile::tempdir().unwrap();
        assert!(Repo::open(outside.path())
            .unwrap_err()
            .to_string()
            .contains("not in a git"));
    }

    #[test]
    fn merged_branches_are_walked_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        linear_repo(d, 2);
        sh(d, "git checkout -q -b side");
        std::fs::write(d.join("side.txt"), "s\n").unwrap();
        sh(d, &format!("git add -A && {GIT} commit -qm side"));
        sh(d, "git checkout -q -");
        std::fs::write(d.join("main.txt"), "m\n").unwrap();
        sh(d, &format!("git add -A && {GIT} commit -qm main"));
        sh(d, &format!("{GIT} merge -q --no-ff -m merge side"));
        let repo = Repo::open(d).unwrap();
        let good = repo.resolve("c1").unwrap();
        let bad = repo.resolve("HEAD").unwrap();
        assert_eq!(repo.ancestry_path(&good, &bad, true).unwrap().len(), 2);
        assert_eq!(repo.ancestry_path(&good, &bad, false).unwrap().len(), 3);
    }
}
