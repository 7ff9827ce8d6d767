//! The cargo recipe of a git revision: `cargo build --profile P --manifest-path
//! <src>/<manifest>` into a target directory shared by every commit built with the same
//! settings (dependencies compiled once, not per commit), and the binary copied out as
//! the commit's artifact, so the next commit's build cannot overwrite it.

use crate::cargo::{package_name, profile_dir, run_cargo, CargoPlan};
use crate::error::BuildError;
use crate::process::ProcessRun;
use crate::recipe::CargoRecipe;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// The plan of `recipe` for the revision extracted at `src`.
pub fn plan(recipe: &CargoRecipe, src: &Path, target: &Path) -> Result<CargoPlan, BuildError> {
    let manifest = src.join(&recipe.manifest);
    let mut args: Vec<String> = vec![
        "build".into(),
        "--profile".into(),
        recipe.profile.clone(),
        "--manifest-path".into(),
        manifest.display().to_string(),
        "--target-dir".into(),
        target.display().to_string(),
    ];
    if let Some(p) = &recipe.package {
        args.extend(["-p".into(), p.clone()]);
    }
    if let Some(b) = &recipe.bin {
        args.extend(["--bin".into(), b.clone()]);
    }
    let name = match recipe.bin.clone().or_else(|| recipe.package.clone()) {
        Some(n) => n,
        None => package_name(&manifest)?,
    };
    Ok(CargoPlan {
        program: "cargo".into(),
        args,
        env: Vec::new(),
        // The binary must land where the plan says.
        env_remove: ["CARGO_TARGET_DIR", "CARGO_BUILD_TARGET"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        target_dir: target.to_path_buf(),
        binary: target.join(profile_dir(&recipe.profile)).join(name),
    })
}

/// Builds the revision at `src` and copies its binary to `out`: the command line, how
/// it ended and the program to run.
pub fn build(
    recipe: &CargoRecipe,
    src: &Path,
    target: &Path,
    out: &Path,
    log: &Path,
    stop: &AtomicBool,
) -> Result<(String, ProcessRun, PathBuf), BuildError> {
    let plan = match plan(recipe, src, target) {
        Ok(p) => p,
        // A revision whose manifest cannot be read does not build.
        Err(BuildError::Io { path, source }) => {
            let run = ProcessRun {
                ok: false,
                status: format!("{}: {source}", path.display()),
                tail: Vec::new(),
                seconds: 0.0,
            };
            return Ok((format!("cargo build ({})", path.display()), run, out.into()));
        }
        Err(e) => return Err(e),
    };
    let command = format!("cargo {}", plan.args.join(" "));
    let cargo = run_cargo(&plan, Some(log), stop)?;
    let mut run = ProcessRun {
        ok: cargo.ok,
        status: if cargo.ok {
            "exit status: 0"
        } else {
            "cargo failed"
        }
        .to_string(),
        tail: cargo.tail.lines().map(str::to_string).collect(),
        seconds: cargo.seconds,
    };
    if run.ok {
        if let Err(e) = std::fs::copy(&plan.binary, out) {
            run.ok = false;
            run.status = format!(
                "cargo succeeded but {} cannot be copied ({e}): name the binary with `bin`",
                plan.binary.display()
            );
        }
    }
    Ok((command, run, out.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use crate::git::tests::{sh, GIT};
    use crate::{BuildCache, BuildSettings, CargoRecipe, Recipe, Repo};
    use std::sync::atomic::AtomicBool;

    #[test]
    fn builds_each_revision_of_a_cargo_project() {
        let repo = tempfile::tempdir().unwrap();
        let dir = repo.path();
        std::fs::create_dir_all(dir.join("node/src")).unwrap();
        std::fs::write(
            dir.join("node/Cargo.toml"),
            "[package]\nname = \"toy-node\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
        )
        .unwrap();
        let main = |v: &str| format!("fn main() {{ println!(\"{v}\"); }}\n");
        std::fs::write(dir.join("node/src/main.rs"), main("v1")).unwrap();
        sh(
            dir,
            &format!("git init -q . && git add -A && {GIT} commit -qm v1 && git tag v1"),
        );
        std::fs::write(dir.join("node/src/main.rs"), main("v2")).unwrap();
        sh(dir, &format!("git add -A && {GIT} commit -qm v2"));
        // Uncommitted work must not leak into a build.
        std::fs::write(dir.join("node/src/main.rs"), main("dirty")).unwrap();

        let repo = Repo::open(dir).unwrap();
        let settings = BuildSettings::new(Recipe::Cargo(CargoRecipe {
            manifest: "node/Cargo.toml".into(),
            package: None,
            bin: None,
            profile: "release".into(),
        }))
        .unwrap();
        let cache_dir = tempfile::tempdir().unwrap();
        let cache = BuildCache::new(cache_dir.path());
        let stop = AtomicBool::new(false);
        let run = |p: &std::path::Path| {
            let out = std::process::Command::new(p).output().unwrap();
            String::from_utf8(out.stdout).unwrap()
        };
        let v1 = cache
            .build(&repo, &repo.resolve("v1").unwrap(), &settings, &stop)
            .unwrap();
        let v2 = cache
            .build(&repo, &repo.resolve("HEAD").unwrap(), &settings, &stop)
            .unwrap();
        // Each commit keeps its own binary, though they share a target directory.
        assert_eq!(run(&v1.program), "v1\n");
        assert_eq!(run(&v2.program), "v2\n");
    }
}
