//! How a dyno binary was built: what every stored run and metrics endpoint says about
//! the build that measured it. The binary fills it in from its build script; a debug
//! build's numbers mean nothing, and `dyno tune` variants differ exactly here.

use serde::Serialize;

/// A dyno binary's build, as its build script recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    /// The package version.
    pub version: &'static str,
    /// Cargo profile name (`release`, `debug`, or a custom profile such as `production`).
    pub profile: &'static str,
    /// Optimisation level.
    pub opt_level: &'static str,
    /// Whether debug assertions are compiled in.
    pub debug_assertions: bool,
    /// `rustc -V` of the compiler.
    pub rustc: &'static str,
    /// RUSTFLAGS (target-cpu and friends).
    pub rustflags: &'static str,
    /// `CARGO_PROFILE_*` overrides seen at build time.
    pub profile_env: &'static str,
    /// Target triple.
    pub target: &'static str,
}

impl BuildInfo {
    /// True for a build whose numbers mean nothing: no optimisation or debug assertions.
    pub fn is_debug(&self) -> bool {
        self.debug_assertions || self.opt_level == "0"
    }

    /// One line for output and the store: version, profile, optimisation, compiler, flags.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "dyno {} ({} profile, opt-level {}{}, {}",
            self.version,
            self.profile,
            self.opt_level,
            if self.debug_assertions {
                ", debug assertions"
            } else {
                ""
            },
            self.rustc
        );
        if !self.rustflags.is_empty() {
            s.push_str(&format!(", RUSTFLAGS \"{}\"", self.rustflags));
        }
        if !self.profile_env.is_empty() {
            s.push_str(&format!(", {}", self.profile_env));
        }
        s.push(')');
        s
    }

    /// The build as JSON (for `--format json` and a run's settings).
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a build's fields serialise")
    }

    /// Why a debug build refuses to measure, and how to build one that may.
    pub fn debug_refusal(&self) -> String {
        format!(
            "this dyno is a debug build (opt-level {}{}): its scores would be meaningless. \
             Build it optimised: `cargo run --release -p dyno -- ...` or `cargo install --path crates/dyno`",
            self.opt_level,
            if self.debug_assertions {
                ", debug assertions on"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RELEASE: BuildInfo = BuildInfo {
        version: "0.1.0",
        profile: "release",
        opt_level: "3",
        debug_assertions: false,
        rustc: "rustc 1.95.0",
        rustflags: "",
        profile_env: "",
        target: "x86_64-unknown-linux-gnu",
    };

    #[test]
    fn a_build_describes_itself_in_one_line_and_as_json() {
        assert!(!RELEASE.is_debug());
        assert_eq!(
            RELEASE.describe(),
            "dyno 0.1.0 (release profile, opt-level 3, rustc 1.95.0)"
        );
        let tuned = BuildInfo {
            rustflags: "-C target-cpu=native",
            profile_env: "CARGO_PROFILE_RELEASE_LTO=fat",
            ..RELEASE
        };
        assert_eq!(
            tuned.describe(),
            "dyno 0.1.0 (release profile, opt-level 3, rustc 1.95.0, RUSTFLAGS \"-C target-cpu=native\", CARGO_PROFILE_RELEASE_LTO=fat)"
        );
        let json = RELEASE.json();
        assert_eq!(json["opt_level"], "3");
        assert_eq!(json["debug_assertions"], false);
        assert_eq!(json.as_object().unwrap().len(), 8);
    }

    #[test]
    fn no_optimisation_or_debug_assertions_make_a_debug_build() {
        let o0 = BuildInfo {
            opt_level: "0",
            ..RELEASE
        };
        let asserts = BuildInfo {
            debug_assertions: true,
            ..RELEASE
        };
        assert!(o0.is_debug() && asserts.is_debug());
        assert!(asserts
            .describe()
            .contains("opt-level 3, debug assertions, rustc"));
        assert!(asserts
            .debug_refusal()
            .starts_with("this dyno is a debug build (opt-level 3, debug assertions on)"));
    }
}
