//! Records how this dyno binary was built, so every stored run says which build measured
//! it: a debug build is refused, and `dyno tune` variants differ exactly here.

use std::env;
use std::process::Command;

fn main() {
    let get = |k: &str| env::var(k).unwrap_or_default();
    let rustc = Command::new(env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    // RUSTFLAGS arrive joined by 0x1f; keep only what shapes code generation.
    let flags: Vec<String> = get("CARGO_ENCODED_RUSTFLAGS")
        .split('\u{1f}')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect();
    // Profile overrides given through the environment (how `dyno tune` sets them).
    let mut overrides: Vec<String> = env::vars()
        .filter(|(k, _)| k.starts_with("CARGO_PROFILE_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    overrides.sort();
    println!("cargo:rustc-env=DYNO_BUILD_PROFILE={}", get("PROFILE"));
    println!("cargo:rustc-env=DYNO_BUILD_OPT_LEVEL={}", get("OPT_LEVEL"));
    println!("cargo:rustc-env=DYNO_BUILD_RUSTC={}", rustc.trim());
    println!("cargo:rustc-env=DYNO_BUILD_RUSTFLAGS={}", flags.join(" "));
    println!(
        "cargo:rustc-env=DYNO_BUILD_PROFILE_ENV={}",
        overrides.join(" ")
    );
    println!("cargo:rustc-env=DYNO_BUILD_TARGET={}", get("TARGET"));
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo:rerun-if-changed=build.rs");
}
