//! The build layer of dyno: from a revision of a repository to a program to run, built
//! once. `dyno compare` (git subjects), `dyno compare bisect` (every tested revision)
//! and `dyno tune` (cargo with a profile per variant) stand on it.
//!
//! - [`Repo`] ([`git`]): a repository read with `git` and never written: revisions
//!   resolved, the commits between two of them (`--ancestry-path`), a commit's subject,
//!   author and date, and `git archive` extraction (the user's work tree untouched).
//! - [`Recipe`] ([`recipe`]): how a revision is built: a build command with `{src}` (the
//!   extracted revision) and `{out}` (the artifact), or cargo with a profile.
//!   [`BuildSettings`] fingerprints a recipe with its toolchain.
//! - [`BuildCache`] ([`cache`]): artifacts kept per commit and settings; a failed build is
//!   kept as failed ([`FailedBuild`], with the tail of its output).
//! - [`cargo`]: one cargo invocation ([`CargoPlan`]) with a cleaned environment, and its
//!   inputs' fingerprint; [`toolchain`]: `rustc -vV` and running a tool;
//!   [`fingerprint`]: SHA-256 of files and source trees.
//! - Every build runs as a guarded child ([`process`], dyno-proc): stopped with its whole
//!   process group when the stop flag is set, never outliving dyno.
//!
//! ```no_run
//! use dyno_build::{BuildCache, BuildCommand, BuildSettings, Recipe, Repo};
//! use std::sync::atomic::AtomicBool;
//!
//! let repo = Repo::open("node-src".as_ref())?;
//! let commit = repo.resolve("v1.5")?;
//! let command = vec!["go".into(), "build".into(), "-o".into(), "{out}".into(), "./cmd/node".into()];
//! let settings = BuildSettings::new(Recipe::Command(BuildCommand::new(command, None)?))?;
//! let cache = BuildCache::new(dyno_build::cache::default_dir());
//! let built = cache.build(&repo, &commit, &settings, &AtomicBool::new(false))?;
//! println!("run {}", built.program.display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod cache;
pub mod cargo;
mod error;
pub mod fingerprint;
pub mod git;
pub mod process;
pub mod recipe;
mod revision_cargo;
pub mod toolchain;

pub use cache::{Artifact, BuildCache};
pub use cargo::{CargoPlan, CargoRun};
pub use error::{BuildError, FailedBuild, GitError, RecipeError};
pub use fingerprint::{sha256_file, short_hash};
pub use git::{CommitInfo, Repo};
pub use recipe::{BuildCommand, BuildSettings, CargoRecipe, Recipe};
