//! How this binary was built (recorded by build.rs) and the guard against debug builds.

/// Environment variable that lets dyno's own tests run a debug build. Results from such
/// a run are labelled as coming from a debug build wherever they are shown or stored.
pub const ALLOW_DEBUG_ENV: &str = "DYNO_ALLOW_DEBUG_BUILD";

/// Cargo profile name (`release`, `debug`, or a custom profile such as `production`).
pub const PROFILE: &str = env!("DYNO_BUILD_PROFILE");
/// Optimisation level.
pub const OPT_LEVEL: &str = env!("DYNO_BUILD_OPT_LEVEL");
/// `rustc -V` of the compiler that built dyno.
pub const RUSTC: &str = env!("DYNO_BUILD_RUSTC");
/// RUSTFLAGS (target-cpu and friends).
pub const RUSTFLAGS: &str = env!("DYNO_BUILD_RUSTFLAGS");
/// `CARGO_PROFILE_*` overrides seen at build time.
pub const PROFILE_ENV: &str = env!("DYNO_BUILD_PROFILE_ENV");
/// Target triple.
pub const TARGET: &str = env!("DYNO_BUILD_TARGET");

/// The labels of the `dyno_build_info` gauge every metrics endpoint of this binary serves.
pub const LABELS: &[(&str, &str)] = &[
    ("version", env!("CARGO_PKG_VERSION")),
    ("profile", PROFILE),
    ("opt_level", OPT_LEVEL),
    ("rustc", RUSTC),
];

/// True for a build whose numbers mean nothing: no optimisation or debug assertions.
pub fn is_debug_build() -> bool {
    cfg!(debug_assertions) || OPT_LEVEL == "0"
}

/// One line for output and the store: version, profile, optimisation, compiler, flags.
pub fn describe() -> String {
    let mut s = format!(
        "dyno {} ({PROFILE} profile, opt-level {OPT_LEVEL}{}, {RUSTC}",
        env!("CARGO_PKG_VERSION"),
        if cfg!(debug_assertions) {
            ", debug assertions"
        } else {
            ""
        },
    );
    if !RUSTFLAGS.is_empty() {
        s.push_str(&format!(", RUSTFLAGS \"{RUSTFLAGS}\""));
    }
    if !PROFILE_ENV.is_empty() {
        s.push_str(&format!(", {PROFILE_ENV}"));
    }
    s.push(')');
    s
}

/// Build details as JSON (for `--format json` and the run's settings).
pub fn json() -> serde_json::Value {
    serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "profile": PROFILE,
        "opt_level": OPT_LEVEL,
        "debug_assertions": cfg!(debug_assertions),
        "rustc": RUSTC,
        "rustflags": RUSTFLAGS,
        "profile_env": PROFILE_ENV,
        "target": TARGET,
    })
}

/// Refuses to measure with a debug build unless dyno's tests asked for it.
pub fn guard() -> anyhow::Result<bool> {
    if !is_debug_build() {
        return Ok(false);
    }
    if std::env::var_os(ALLOW_DEBUG_ENV).is_some() {
        return Ok(true);
    }
    anyhow::bail!(
        "this dyno is a debug build (opt-level {OPT_LEVEL}{}): its scores would be meaningless. \
         Build it optimised: `cargo run --release -p dyno -- ...` or `cargo install --path crates/dyno`",
        if cfg!(debug_assertions) { ", debug assertions on" } else { "" }
    )
}
