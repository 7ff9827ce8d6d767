//! How a revision is built ([`Recipe`]): a build command with placeholders (`{src}` the
//! extracted revision, `{out}` where the artifact goes) or cargo with a profile, and the
//! fingerprint of those settings with the toolchain they run ([`BuildSettings`]), which
//! keys the cache: the same commit built with other settings, or by another compiler, is
//! another build.

use crate::error::{BuildError, RecipeError};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The extracted revision, in a build command or `bin`.
pub const SRC: &str = "{src}";
/// Where the artifact goes (a file or a directory the build creates), in a build
/// command or `bin`.
pub const OUT: &str = "{out}";

/// How to build a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recipe {
    /// Any build: a command line run in the extracted revision.
    Command(BuildCommand),
    /// A Cargo project built with a profile.
    Cargo(CargoRecipe),
}

/// A build command and the program it makes (checked by [`BuildCommand::new`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildCommand {
    argv: Vec<String>,
    bin: String,
}

impl BuildCommand {
    /// A build command line (`["go", "build", "-o", "{out}", "./cmd/node"]`), run with
    /// the extracted revision as its working directory, and the program to run once it
    /// succeeded (`bin`; default `{out}`, the artifact itself; `{out}/bin/node` or
    /// `{src}/node.py` name a file inside them). A command that never names `{out}` is
    /// refused: the artifact must live apart from the sources to be cached per build.
    pub fn new(argv: Vec<String>, bin: Option<String>) -> Result<BuildCommand, RecipeError> {
        if argv.first().is_none_or(|p| p.trim().is_empty()) {
            return Err(RecipeError::Empty);
        }
        if !argv.iter().any(|a| a.contains(OUT)) {
            return Err(RecipeError::NoOut { command: argv });
        }
        let bin = bin.unwrap_or_else(|| OUT.to_string());
        if !(bin.contains(OUT) || bin.starts_with(SRC)) {
            return Err(RecipeError::BinOutsideBuild { bin });
        }
        Ok(BuildCommand { argv, bin })
    }

    /// The command line as given.
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// The program to run, placeholders unfilled.
    pub fn bin(&self) -> &str {
        &self.bin
    }

    /// The command line with `{src}` and `{out}` filled; a relative program path
    /// (`./build.sh`) is the revision's own.
    pub fn filled(&self, src: &Path, out: &Path) -> Vec<String> {
        let mut line: Vec<String> = self.argv.iter().map(|a| fill(a, src, out)).collect();
        if line[0].contains('/') && Path::new(&line[0]).is_relative() {
            line[0] = src.join(&line[0]).display().to_string();
        }
        line
    }
}

/// `text` with `{src}` and `{out}` filled.
pub fn fill(text: &str, src: &Path, out: &Path) -> String {
    text.replace(SRC, &src.display().to_string())
        .replace(OUT, &out.display().to_string())
}

/// A Cargo project inside the repository, built with `cargo build --profile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CargoRecipe {
    /// The project's `Cargo.toml`, relative to the repository's top level.
    pub manifest: PathBuf,
    /// The package to build (`-p`).
    pub package: Option<String>,
    /// The binary to run (`--bin`; default: `package`, else the manifest's package).
    pub bin: Option<String>,
    /// The cargo profile (`release` unless given).
    pub profile: String,
}

impl Recipe {
    /// One line for progress and reports: the command, or the cargo build.
    pub fn describe(&self) -> String {
        match self {
            Recipe::Command(c) => c.argv.join(" "),
            Recipe::Cargo(c) => format!(
                "cargo build --profile {} --manifest-path {}",
                c.profile,
                c.manifest.display()
            ),
        }
    }
}

/// A recipe with the fingerprint of its settings and toolchain: what the cache is keyed
/// by, besides the commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildSettings {
    /// How to build.
    pub recipe: Recipe,
    /// The fingerprint (10 hex digits).
    pub key: String,
}

impl BuildSettings {
    /// Fingerprints `recipe` with its toolchain: for cargo, the compiler's `rustc -vV`;
    /// for a command, its program as found on `PATH` with the program file's size and
    /// modification time (a new `go` is a new build). A program inside the revision
    /// (`./build.sh`) belongs to the commit and is not probed.
    pub fn new(recipe: Recipe) -> Result<BuildSettings, BuildError> {
        let toolchain = match &recipe {
            Recipe::Cargo(_) => crate::toolchain::rustc_version(None)?,
            Recipe::Command(c) => program_identity(&c.argv[0]),
        };
        let key = crate::short_hash(
            serde_json::json!({ "recipe": recipe, "toolchain": toolchain })
                .to_string()
                .as_bytes(),
        );
        Ok(BuildSettings { recipe, key })
    }
}

/// Where `program` is found and what the file is (size, modification time).
fn program_identity(program: &str) -> String {
    let found = if program.contains('/') {
        Some(PathBuf::from(program)).filter(|p| p.is_absolute())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| p.is_file())
        })
    };
    match found.and_then(|p| Some((std::fs::metadata(&p).ok()?, p))) {
        Some((meta, p)) => format!(
            "{} {} {}",
            p.display(),
            meta.len(),
            crate::fingerprint::mtime_ns(&meta)
        ),
        None => program.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_command_must_name_its_artifact() {
        let e = BuildCommand::new(argv(&["go", "build", "./cmd/node"]), None).unwrap_err();
        assert!(matches!(e, RecipeError::NoOut { .. }));
        assert!(e.to_string().contains("never names `{out}`"), "{e}");
        assert_eq!(
            BuildCommand::new(vec![], None).unwrap_err(),
            RecipeError::Empty
        );
        let e = BuildCommand::new(argv(&["make", "OUT={out}"]), Some("node".into()));
        assert!(matches!(e, Err(RecipeError::BinOutsideBuild { .. })));
        let c = BuildCommand::new(argv(&["./build.sh", "-o={out}"]), None).unwrap();
        assert_eq!(c.bin(), "{out}");
        let line = c.filled(Path::new("/c/src"), Path::new("/c/out"));
        assert_eq!(line, ["/c/src/./build.sh", "-o=/c/out"]);
    }

    #[test]
    fn settings_are_keyed_by_command_and_program() {
        let a = BuildSettings::new(Recipe::Command(
            BuildCommand::new(argv(&["sh", "-c", "cp x {out}"]), None).unwrap(),
        ))
        .unwrap();
        let again = BuildSettings::new(a.recipe.clone()).unwrap();
        assert_eq!(a.key, again.key);
        let b = BuildSettings::new(Recipe::Command(
            BuildCommand::new(argv(&["sh", "-c", "cp y {out}"]), None).unwrap(),
        ))
        .unwrap();
        assert_ne!(a.key, b.key);
        assert!(program_identity("sh").contains("/sh "), "found on PATH");
    }
}
