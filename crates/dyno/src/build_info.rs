//! How this binary was built (recorded by build.rs; described by
//! [`dyno_model::BuildInfo`]) and the guard against debug builds.

use dyno_model::BuildInfo;

/// Environment variable that lets dyno's own tests run a debug build. Results from such
/// a run are labelled as coming from a debug build wherever they are shown or stored.
pub const ALLOW_DEBUG_ENV: &str = "DYNO_ALLOW_DEBUG_BUILD";

/// This binary's build.
pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    profile: env!("DYNO_BUILD_PROFILE"),
    opt_level: env!("DYNO_BUILD_OPT_LEVEL"),
    debug_assertions: cfg!(debug_assertions),
    rustc: env!("DYNO_BUILD_RUSTC"),
    rustflags: env!("DYNO_BUILD_RUSTFLAGS"),
    profile_env: env!("DYNO_BUILD_PROFILE_ENV"),
    target: env!("DYNO_BUILD_TARGET"),
};

/// The labels of the `dyno_build_info` gauge every metrics endpoint of this binary serves.
pub const LABELS: &[(&str, &str)] = &[
    ("version", BUILD.version),
    ("profile", BUILD.profile),
    ("opt_level", BUILD.opt_level),
    ("rustc", BUILD.rustc),
];

/// One line for output and the store: version, profile, optimisation, compiler, flags.
pub fn describe() -> String {
    BUILD.describe()
}

/// Build details as JSON (for `--format json` and the run's settings).
pub fn json() -> serde_json::Value {
    BUILD.json()
}

/// Refuses to measure with a debug build unless dyno's tests asked for it.
pub fn guard() -> anyhow::Result<bool> {
    if !BUILD.is_debug() {
        return Ok(false);
    }
    if std::env::var_os(ALLOW_DEBUG_ENV).is_some() {
        return Ok(true);
    }
    anyhow::bail!("{}", BUILD.debug_refusal())
}
