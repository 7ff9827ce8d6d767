//! Subjects given as a git revision: the comparison file's `git` table turned into the
//! build layer's terms (dyno-build: a repository, a commit, a recipe), checked before
//! anything starts, and every git subject built (or taken from the build cache) with its
//! program put in front of its arguments.
//!
//! Two forms:
//!
//! ```toml
//! git = { manifest = "node/Cargo.toml", rev = "v1.5", package = "node", bin = "node" }   # cargo
//! git = { repo = "../node-src", rev = "v1.5", build = ["go", "build", "-o", "{out}", "./cmd/node"] }
//! ```
//!
//! The cargo form builds with `cargo build --profile release` (`profile` to choose
//! another); the build form runs the command in the extracted revision (`{src}`), which
//! must write the artifact to `{out}`; `bin` is then the program to run (default
//! `{out}`; `{out}/bin/node` or `{src}/node.py` name a file inside them).

use crate::spec::{ComparisonFile, GitSource};
use dyno_build::{
    BuildCache, BuildCommand, BuildError as LayerError, BuildSettings, CargoRecipe, Recipe, Repo,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Why a git subject could not be built.
#[derive(Debug, thiserror::Error)]
#[error("subject `{subject}` at {rev}: {source}")]
pub struct BuildError {
    /// The subject.
    pub subject: String,
    /// The revision as written.
    pub rev: String,
    /// What the build layer said (boxed: the layer's error is large, and a build error
    /// travels up through every `Result` of a comparison's start).
    #[source]
    pub source: Box<LayerError>,
}

/// The cache `dyno compare` builds into when `--build-dir` is not given (the build
/// layer's, shared with `dyno compare bisect`).
pub fn default_cache() -> PathBuf {
    dyno_build::cache::default_dir()
}

/// `g` checked and resolved: its paths taken relative to the subject's `cwd`, its form
/// (cargo or build command) complete, its revision resolved to a commit. A refusal is
/// the key under `git` at fault (`git`, `git.build`) and why.
pub fn checked(g: &GitSource, cwd: Option<&Path>) -> Result<GitSource, (String, String)> {
    let mut g = g.clone();
    let under_cwd = |p: &mut PathBuf| {
        if let Some(dir) = cwd.filter(|_| p.is_relative()) {
            *p = dir.join(&*p);
        }
    };
    g.manifest.iter_mut().for_each(under_cwd);
    g.repo.iter_mut().for_each(under_cwd);
    recipe(&g)?;
    let repo = repo_of(&g).map_err(|e| ("git".to_string(), e))?;
    g.commit = repo
        .resolve(&g.rev)
        .map_err(|e| ("git".to_string(), e.to_string()))?;
    Ok(g)
}

fn refuse<T>(key: &str, why: &str) -> Result<T, (String, String)> {
    Err((key.to_string(), why.to_string()))
}

/// The build layer's recipe of `g`.
pub fn recipe(g: &GitSource) -> Result<Recipe, (String, String)> {
    match (&g.manifest, &g.repo, &g.build) {
        (Some(_), _, Some(_)) => refuse(
            "git.manifest",
            "`manifest` is for a Cargo project; a `build` command goes with `repo`",
        ),
        (Some(_), Some(_), None) => refuse(
            "git.repo",
            "a Cargo project's repository is the one holding `manifest`: give one of them",
        ),
        (None, None, _) => refuse(
            "git",
            "give `manifest` (a Cargo project) or `repo` and `build` (a build command with {out})",
        ),
        (None, Some(_), None) => refuse(
            "git.build",
            "missing: the command that builds a revision, e.g. [\"go\", \"build\", \"-o\", \"{out}\", \"./cmd/node\"] (or give `manifest` for a Cargo project)",
        ),
        (None, Some(_), Some(build)) => {
            if g.package.is_some() || g.profile.is_some() {
                return refuse(
                    "git.build",
                    "`package` and `profile` are for a Cargo project (`manifest`), not a build command",
                );
            }
            BuildCommand::new(build.clone(), g.bin.clone())
                .map(Recipe::Command)
                .map_err(|e| {
                    let key = match e {
                        dyno_build::RecipeError::BinOutsideBuild { .. } => "git.bin",
                        _ => "git.build",
                    };
                    (key.to_string(), e.to_string())
                })
        }
        (Some(manifest), None, None) => {
            let (_, rel) = manifest_in_repo(manifest).map_err(|e| ("git".to_string(), e))?;
            Ok(Recipe::Cargo(CargoRecipe {
                manifest: rel,
                package: g.package.clone(),
                bin: g.bin.clone(),
                profile: g.profile.clone().unwrap_or_else(|| "release".into()),
            }))
        }
    }
}

/// The repository and the manifest's path inside it.
fn manifest_in_repo(manifest: &Path) -> Result<(Repo, PathBuf), String> {
    let abs = manifest
        .canonicalize()
        .map_err(|e| format!("manifest {}: {e}", manifest.display()))?;
    let repo = Repo::open(&abs).map_err(|e| {
        format!(
            "manifest {} is not in a git work tree: {e}",
            manifest.display()
        )
    })?;
    let root = repo
        .root()
        .canonicalize()
        .unwrap_or_else(|_| repo.root().to_path_buf());
    let rel = abs
        .strip_prefix(&root)
        .map_err(|_| format!("manifest {} is outside its repository", manifest.display()))?
        .to_path_buf();
    Ok((repo, rel))
}

/// The repository `g` builds from.
pub fn repo_of(g: &GitSource) -> Result<Repo, String> {
    match (&g.manifest, &g.repo) {
        (Some(m), _) => manifest_in_repo(m).map(|(repo, _)| repo),
        (None, Some(r)) => Repo::open(r).map_err(|e| e.to_string()),
        (None, None) => Err("no `manifest` or `repo`".into()),
    }
}

/// The build settings of `g` (its recipe fingerprinted with its toolchain).
pub fn settings(g: &GitSource) -> Result<BuildSettings, LayerError> {
    let recipe = recipe(g)
        .map_err(|(k, why)| LayerError::Git(dyno_build::GitError(format!("key `{k}`: {why}"))))?;
    BuildSettings::new(recipe)
}

/// Builds (or takes from `cache`) the revision of `g`: the program to run.
pub fn build(
    subject: &str,
    g: &GitSource,
    cache: &BuildCache,
    stop: &AtomicBool,
) -> Result<PathBuf, BuildError> {
    let err = |source| BuildError {
        subject: subject.to_string(),
        rev: g.rev.clone(),
        source: Box::new(source),
    };
    let repo = repo_of(g).map_err(|e| err(LayerError::Git(e.into())))?;
    let settings = settings(g).map_err(err)?;
    let built = cache
        .build(&repo, &g.commit, &settings, stop)
        .map_err(err)?;
    Ok(built.program)
}

/// Builds every `git` subject of `cfg` (calling `starting(subject, rev, commit)` before
/// each) and puts its program in front of its arguments.
pub fn build_all(
    cfg: &mut ComparisonFile,
    cache: &BuildCache,
    stop: &AtomicBool,
    mut starting: impl FnMut(&str, &str, &str),
) -> Result<(), BuildError> {
    for s in cfg.subjects.iter_mut() {
        let Some(g) = s.git.clone() else { continue };
        starting(&s.name, &g.rev, &g.commit);
        let program = build(&s.name, &g, cache, stop)?;
        s.command.insert(0, program.display().to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

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

    const GIT: &str = "git -c user.email=t@example.invalid -c user.name=t";

    #[test]
    fn a_build_command_subject_is_built_per_revision_and_checked_first() {
        let repo = tempfile::tempdir().unwrap();
        let cache = tempfile::tempdir().unwrap();
        let dir = repo.path();
        let node = |v: &str| format!("#!/bin/sh\necho {v} \"$@\"\n");
        std::fs::write(dir.join("node.sh"), node("v1")).unwrap();
        sh(
            dir,
            &format!("git init -q . && git add -A && {GIT} commit -qm v1 && {GIT} tag v1"),
        );
        std::fs::write(dir.join("node.sh"), node("v2")).unwrap();
        sh(dir, &format!("git add -A && {GIT} commit -qm v2"));
        // Uncommitted work must not leak into a build.
        std::fs::write(dir.join("node.sh"), node("dirty")).unwrap();

        let build = r#"["sh", "-c", "cp node.sh {out} && chmod +x {out}"]"#;
        let text = format!(
            "[[subject]]\nname = \"old\"\ngit = {{ repo = \"{r}\", rev = \"v1\", build = {build} }}\nargs = [\"--x\"]\n\
             [[subject]]\nname = \"new\"\ngit = {{ repo = \"{r}\", rev = \"HEAD\", build = {build} }}\n\
             [[workload]]\nname = \"w\"\nrate = 1\nmeasure_s = 2\n",
            r = dir.display()
        );
        let mut cfg = ComparisonFile::parse(&text, Path::new("c.toml")).unwrap();
        assert_eq!(cfg.subjects[0].command, ["--x"]);
        let mut started = Vec::new();
        let cache = BuildCache::new(cache.path());
        build_all(&mut cfg, &cache, &AtomicBool::new(false), |s, rev, _| {
            started.push(format!("{s}@{rev}"))
        })
        .unwrap();
        assert_eq!(started, ["old@v1", "new@HEAD"]);
        let run = |cmd: &[String]| {
            let out = Command::new(&cmd[0]).args(&cmd[1..]).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        assert_eq!(run(&cfg.subjects[0].command), "v1 --x\n");
        assert_eq!(run(&cfg.subjects[1].command), "v2\n");

        let cases = [
            (
                text.replace("rev = \"v1\"", "rev = \"v9\""),
                "key `subject[0].git`: rev `v9` is not a commit",
            ),
            (
                text.replacen(build, r#"["sh", "-c", "cp node.sh node"]"#, 1),
                "key `subject[0].git.build`: the build command",
            ),
            (
                text.replacen(&format!(", build = {build}"), "", 1),
                "key `subject[0].git.build`: missing",
            ),
            (
                text.replacen("rev = \"v1\",", "rev = \"v1\", bin = \"node\",", 1),
                "key `subject[0].git.bin`: ",
            ),
        ];
        for (bad, want) in cases {
            let e = ComparisonFile::parse(&bad, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            // The place of the key at fault, else of its subject.
            assert!(e.starts_with("c.toml:"), "{e}");
            assert!(e.contains(want), "{e}\nwanted: {want}");
        }
    }
}
