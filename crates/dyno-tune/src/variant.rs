//! Variants: the cartesian product of the matrix minus the excluded combinations, each
//! with a stable id and a readable label, and the exact cargo invocation that builds it.

use crate::profile::TargetCpu;
pub use crate::settings::Settings;
use crate::study::{Exclude, Matrix, Project};
use std::path::Path;

/// One build of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Short stable hash of the settings (and the profile name).
    pub id: String,
    /// Readable label, e.g. `nightly/native/o3/fat/cgu1`.
    pub label: String,
    /// The settings.
    pub settings: Settings,
}

fn axis<T: Clone>(values: &[T]) -> Vec<Option<T>> {
    if values.is_empty() {
        vec![None]
    } else {
        values.iter().cloned().map(Some).collect()
    }
}

fn matches(rule: &Exclude, s: &Settings) -> bool {
    fn eq<T: PartialEq>(want: &Option<T>, have: &Option<T>) -> bool {
        want.is_none() || want == have
    }
    let rule = &rule.matching;
    eq(&rule.toolchain, &s.toolchain)
        && eq(&rule.target_cpu, &s.target_cpu)
        && eq(&rule.opt_level, &s.opt_level)
        && eq(&rule.lto, &s.lto)
        && eq(&rule.codegen_units, &s.codegen_units)
        && eq(&rule.panic, &s.panic)
        && eq(&rule.rustflags, &s.rustflags)
        && eq(&rule.pgo, &s.pgo)
}

/// Every combination of the matrix that no exclude rule matches, in a stable order.
pub fn expand(matrix: &Matrix, exclude: &[Exclude], profile: &str) -> Vec<Variant> {
    let mut out = Vec::new();
    for toolchain in axis(&matrix.toolchain) {
        for target_cpu in axis(&matrix.target_cpu) {
            for opt_level in axis(&matrix.opt_level) {
                for lto in axis(&matrix.lto) {
                    for codegen_units in axis(&matrix.codegen_units) {
                        for panic in axis(&matrix.panic) {
                            for rustflags in axis(&matrix.rustflags) {
                                for pgo in axis(&matrix.pgo) {
                                    let settings = Settings {
                                        toolchain: toolchain.clone(),
                                        target_cpu: target_cpu.clone(),
                                        opt_level,
                                        lto,
                                        codegen_units,
                                        panic,
                                        rustflags: rustflags.clone(),
                                        pgo,
                                    };
                                    if exclude.iter().any(|r| matches(r, &settings)) {
                                        continue;
                                    }
                                    out.push(Variant::new(settings, profile));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

impl Variant {
    /// A variant of these settings built with `profile`.
    pub fn new(settings: Settings, profile: &str) -> Variant {
        let key = serde_json::json!({ "profile": profile, "settings": settings }).to_string();
        Variant {
            id: crate::short_hash(key.as_bytes()),
            label: label(&settings),
            settings,
        }
    }

    /// The `[profile.NAME]` section to paste into Cargo.toml for this variant.
    pub fn profile_section(&self, profile: &str) -> String {
        let s = &self.settings;
        let mut out = format!("[profile.{profile}]\n");
        if profile != "release" {
            out.push_str("inherits = \"release\"\n");
        }
        if let Some(o) = s.opt_level {
            out.push_str(&format!("opt-level = {}\n", o.toml_value()));
        }
        if let Some(l) = s.lto {
            out.push_str(&format!("lto = {}\n", l.toml_value()));
        }
        if let Some(c) = s.codegen_units {
            out.push_str(&format!("codegen-units = {c}\n"));
        }
        if let Some(p) = s.panic {
            out.push_str(&format!("panic = \"{}\"\n", p.cargo_value()));
        }
        out
    }

    /// The command that builds this variant once its section is in Cargo.toml: its
    /// RUSTFLAGS (when any) and its toolchain (when the study names one) included.
    pub fn build_command(&self, profile: &str) -> String {
        self.build_command_with(profile, "")
    }

    /// [`Variant::build_command`] with `extra` RUSTFLAGS after the variant's own (the
    /// profile flags of a PGO build).
    pub fn build_command_with(&self, profile: &str, extra: &str) -> String {
        let mut out = String::new();
        let own = self.rustflags();
        let flags = [own.as_str(), extra]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        if !flags.is_empty() {
            out.push_str(&format!("RUSTFLAGS=\"{flags}\" "));
        }
        out.push_str("cargo ");
        if let Some(t) = &self.settings.toolchain {
            out.push_str(&format!("+{t} "));
        }
        out.push_str(&format!("build --profile {profile}"));
        out
    }

    /// The RUSTFLAGS this variant is built with (possibly empty).
    pub fn rustflags(&self) -> String {
        let mut flags = Vec::new();
        if let Some(cpu) = self.settings.target_cpu.as_ref().and_then(TargetCpu::flag) {
            flags.push(format!("-C target-cpu={cpu}"));
        }
        if let Some(extra) = &self.settings.rustflags {
            if !extra.trim().is_empty() {
                flags.push(extra.trim().to_string());
            }
        }
        flags.join(" ")
    }
}

fn label(s: &Settings) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(t) = &s.toolchain {
        parts.push(t.clone());
    }
    if let Some(c) = &s.target_cpu {
        parts.push(c.label().to_string());
    }
    if let Some(o) = s.opt_level {
        parts.push(o.label());
    }
    if let Some(l) = s.lto {
        parts.push(l.label().to_string());
    }
    if let Some(c) = s.codegen_units {
        parts.push(format!("cgu{c}"));
    }
    if let Some(p) = s.panic {
        parts.push(p.cargo_value().to_string());
    }
    if let Some(r) = &s.rustflags {
        if !r.trim().is_empty() {
            parts.push(format!("[{}]", r.trim()));
        }
    }
    if let Some(p) = s.pgo {
        parts.push(p.label().to_string());
    }
    if parts.is_empty() {
        "default".into()
    } else {
        parts.join("/")
    }
}

/// Exactly how cargo is invoked for one variant: a pure function of the study, so it is
/// tested without building anything. The build layer's cargo invocation, which runs it.
pub use dyno_build::CargoPlan as BuildPlan;

/// The environment-variable spelling of a profile name: `production` -> `PRODUCTION`.
pub use dyno_build::cargo::profile_env_name;

/// The build of `variant` for `project`, into `<work_dir>/target/<variant id>`.
pub fn build_plan(project: &Project, variant: &Variant, work_dir: &Path) -> BuildPlan {
    let p = profile_env_name(&project.profile);
    let key = |k: &str| format!("CARGO_PROFILE_{p}_{k}");
    let target_dir = work_dir.join("target").join(&variant.id);
    let mut args = Vec::new();
    if let Some(t) = &variant.settings.toolchain {
        args.push(format!("+{t}"));
    }
    args.extend([
        "build".to_string(),
        "--profile".into(),
        project.profile.clone(),
    ]);
    args.extend([
        "--manifest-path".into(),
        project.manifest.display().to_string(),
    ]);
    if let Some(pkg) = &project.package {
        args.extend(["-p".into(), pkg.clone()]);
    }
    args.extend(["--bin".into(), project.bin.clone()]);
    args.extend(["--target-dir".into(), target_dir.display().to_string()]);
    let mut env = Vec::new();
    if project.profile != "release" {
        env.push((key("INHERITS"), "release".to_string()));
    }
    let s = &variant.settings;
    if let Some(o) = s.opt_level {
        env.push((key("OPT_LEVEL"), o.cargo_value()));
    }
    if let Some(l) = s.lto {
        env.push((key("LTO"), l.cargo_value().to_string()));
    }
    if let Some(c) = s.codegen_units {
        env.push((key("CODEGEN_UNITS"), c.to_string()));
    }
    if let Some(pa) = s.panic {
        env.push((key("PANIC"), pa.cargo_value().to_string()));
    }
    // Always set, even empty: an empty RUSTFLAGS also keeps `build.rustflags` from the
    // user's cargo config out, so the variant is exactly what its label says.
    env.push(("RUSTFLAGS".to_string(), variant.rustflags()));
    let profile_dir = match project.profile.as_str() {
        "dev" => "debug",
        other => other,
    };
    let binary = target_dir.join(profile_dir).join(format!(
        "{}{}",
        project.bin,
        std::env::consts::EXE_SUFFIX
    ));
    BuildPlan {
        program: "cargo".into(),
        args,
        env,
        env_remove: [
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTUP_TOOLCHAIN",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        target_dir,
        binary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Lto, OptLevel, Panic};
    use std::path::PathBuf;

    fn project(profile: &str) -> Project {
        Project {
            manifest: "/src/node/Cargo.toml".into(),
            package: Some("node".into()),
            bin: "node".into(),
            profile: profile.into(),
        }
    }

    fn settings(lto: Lto) -> Settings {
        Settings {
            toolchain: Some("nightly".into()),
            target_cpu: Some(TargetCpu::Native),
            opt_level: Some(OptLevel::Level(3)),
            lto: Some(lto),
            codegen_units: Some(1),
            panic: Some(Panic::Abort),
            rustflags: Some("-C force-frame-pointers=yes".into()),
            pgo: None,
        }
    }

    #[test]
    fn build_env_for_each_lto_value() {
        for (lto, want) in [
            (Lto::ThinLocal, "false"),
            (Lto::Off, "off"),
            (Lto::Thin, "thin"),
            (Lto::Fat, "fat"),
        ] {
            let v = Variant::new(settings(lto), "production");
            let plan = build_plan(&project("production"), &v, Path::new("/w"));
            let target = format!("/w/target/{}", v.id);
            assert_eq!(
                plan.args,
                [
                    "+nightly",
                    "build",
                    "--profile",
                    "production",
                    "--manifest-path",
                    "/src/node/Cargo.toml",
                    "-p",
                    "node",
                    "--bin",
                    "node",
                    "--target-dir",
                    target.as_str(),
                ]
            );
            let env: Vec<(&str, &str)> = plan
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(
                env,
                [
                    ("CARGO_PROFILE_PRODUCTION_INHERITS", "release"),
                    ("CARGO_PROFILE_PRODUCTION_OPT_LEVEL", "3"),
                    ("CARGO_PROFILE_PRODUCTION_LTO", want),
                    ("CARGO_PROFILE_PRODUCTION_CODEGEN_UNITS", "1"),
                    ("CARGO_PROFILE_PRODUCTION_PANIC", "abort"),
                    (
                        "RUSTFLAGS",
                        "-C target-cpu=native -C force-frame-pointers=yes"
                    ),
                ]
            );
            assert_eq!(
                plan.binary,
                PathBuf::from(format!("/w/target/{}/production/node", v.id))
            );
            assert!(plan
                .env_remove
                .contains(&"CARGO_ENCODED_RUSTFLAGS".to_string()));
        }
    }

    #[test]
    fn unset_dimensions_are_not_passed_and_release_does_not_inherit() {
        let v = Variant::new(
            Settings {
                toolchain: None,
                target_cpu: Some(TargetCpu::None),
                opt_level: None,
                lto: None,
                codegen_units: None,
                panic: None,
                rustflags: None,
                pgo: None,
            },
            "release",
        );
        let plan = build_plan(&project("release"), &v, Path::new("/w"));
        assert_eq!(plan.args[0], "build");
        assert_eq!(plan.env, [("RUSTFLAGS".to_string(), String::new())]);
        assert_eq!(v.label, "generic");
        assert_eq!(v.profile_section("release"), "[profile.release]\n");
        assert_eq!(v.build_command("release"), "cargo build --profile release");
    }

    #[test]
    fn the_build_command_names_the_toolchain_and_the_flags() {
        let v = Variant::new(settings(Lto::Fat), "production");
        assert_eq!(
            v.build_command("production"),
            "RUSTFLAGS=\"-C target-cpu=native -C force-frame-pointers=yes\" cargo +nightly build --profile production"
        );
    }

    #[test]
    fn ids_are_stable_and_distinct_and_labels_readable() {
        let a = Variant::new(settings(Lto::ThinLocal), "production");
        let b = Variant::new(settings(Lto::Off), "production");
        assert_ne!(a.id, b.id);
        assert_eq!(
            a.id,
            Variant::new(settings(Lto::ThinLocal), "production").id
        );
        assert_ne!(a.id, Variant::new(settings(Lto::ThinLocal), "other").id);
        assert_eq!(a.id.len(), 10);
        assert_eq!(
            b.label,
            "nightly/native/o3/lto-off/cgu1/abort/[-C force-frame-pointers=yes]"
        );
        assert_eq!(
            Variant::new(settings(Lto::Fat), "production").profile_section("production"),
            "[profile.production]\ninherits = \"release\"\nopt-level = 3\nlto = \"fat\"\ncodegen-units = 1\npanic = \"abort\"\n"
        );
    }

    #[test]
    fn product_minus_excludes() {
        let m = Matrix {
            toolchain: vec!["stable".into(), "nightly".into()],
            lto: vec![Lto::ThinLocal, Lto::Off, Lto::Thin, Lto::Fat],
            codegen_units: vec![1, 16],
            ..Matrix::default()
        };
        assert_eq!(expand(&m, &[], "production").len(), 16);
        let ex = Exclude {
            matching: Settings {
                lto: Some(Lto::Off),
                codegen_units: Some(1),
                ..Settings::default()
            },
        };
        let vs = expand(&m, &[ex], "production");
        assert_eq!(vs.len(), 14);
        assert!(!vs
            .iter()
            .any(|v| v.settings.lto == Some(Lto::Off) && v.settings.codegen_units == Some(1)));
        let ids: std::collections::BTreeSet<&str> = vs.iter().map(|v| v.id.as_str()).collect();
        assert_eq!(ids.len(), 14);
        assert_eq!(vs[0].label, "stable/lto-false/cgu1");
    }
}
